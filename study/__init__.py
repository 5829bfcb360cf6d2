"""study: what torch.compile/Inductor really does against eager mode.

The package is split one concern per module (see docs/files.md). Importing
``study`` itself imports neither torch nor Hydra, so ``analysis/`` can reuse the schema
on a laptop without torch.
"""

__version__ = "0.1.0"
