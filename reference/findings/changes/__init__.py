"""What changed since an earlier study kept beside the rows (``DIR/v2``, ``DIR/v1``), cell by
cell, and why. Sections of ``python -m reference.findings``."""
