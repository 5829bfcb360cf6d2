"""The H100 reference results that exist: start-up and regional compilation (``startup/``).
``python -m reference.h100 [--check | --write]`` prints, checks or rewrites the Findings from
the CSVs here."""
