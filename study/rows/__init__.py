"""The rows layer: the one row schema, the CSVs, predictions, what a row reveals, the summary."""
