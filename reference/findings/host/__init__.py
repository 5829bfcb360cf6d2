"""What the host costs: compile effects against host effects, host cost across machines,
start-up and guards, and the same cell in two sweeps. Sections of ``python -m reference.findings``."""
