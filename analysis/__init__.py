"""Analysis: a sweep's CSVs -> seaborn figures and a report. Never imports torch."""
