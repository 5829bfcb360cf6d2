"""One question of a sweep, answered as a table: the report's sections (the cause at a glance,
the kernel diff, CUDA graphs, max-autotune's picks) and the tables that ``python -m
analysis.tables TOPIC SWEEP...`` prints (``__main__``). Pure pandas on the CSVs; no torch."""
