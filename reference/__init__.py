"""The reference study: one story told with the tool, kept apart from it.

``reference/findings/`` writes the Findings of a committed results folder from its CSVs (the
sources table, ``reference/sources.py``, names its sweeps); one folder per GPU holds the rows,
their FINDINGS.md and how to rebuild them (``reference/h200/``). This package reads ``analysis``
and ``study.rows``; nothing in ``analysis/`` or ``study/`` reads it. No torch.
"""
