"""The workload ladder: one registry (``registry.py``) and one module per family."""
