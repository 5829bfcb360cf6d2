"""The H200 reference results: CSVs, FINDINGS.md, report.md. ``python -m reference.h200
[--check | --write]`` prints, checks or rewrites the Findings from the CSVs here."""
