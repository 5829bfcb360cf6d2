"""What every section of the Findings stands on: the results dir read and how a figure is
written (``common``), and the blog's claims with their verdicts (``claims``), which the summary
and the v1 comparison quote. It imports no section."""
