"""The rows layer: the one schema, the CSVs, the config and what a row says."""
