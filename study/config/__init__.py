"""The first stage: the typed config, its rules and check, usage messages, identity, compile targets, environment."""
