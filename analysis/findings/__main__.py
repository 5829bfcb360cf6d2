"""``python -m analysis.findings DIR [--write]``: the Findings block of a results dir."""

from analysis.cli import run
from analysis.findings import main

run(main)
