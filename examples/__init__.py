"""Your own workloads for `study`: each file is importable as examples.<name> (README, "Add a workload")."""
