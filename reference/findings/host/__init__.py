"""What the host costs: host cost measured across machines (and the model against the null),
start-up and guards, and the same cell in two sweeps. Sections of ``python -m reference.findings``."""
