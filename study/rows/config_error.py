"""The one exception of a config that cannot run (a leaf: the workloads raise it too)."""


class ConfigError(ValueError):
    """A config value that cannot run. The message names the key and what is allowed."""
