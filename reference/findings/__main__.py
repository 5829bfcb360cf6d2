"""``python -m reference.findings DIR [--write]``: the Findings block of a results dir."""

from analysis.cli import run
from reference.findings.document import main

run(main)
