"""``python -m analysis.findings DIR [--write]``: the Findings block of a results dir."""

from analysis.findings import main

main()
