"""``python -m reference.h100 [--check | --write]``: this folder's Findings from its CSVs.

``--check`` exits 1 when FINDINGS.md's generated block (or SUMMARY.md's) differs
from what the CSVs give, byte for byte; ``--write`` rewrites them."""

import sys
from pathlib import Path

from analysis.cli import run
from reference.findings.document import main

HERE = Path(__file__).resolve().parent
run(lambda: main([str(HERE), *sys.argv[1:]]))
