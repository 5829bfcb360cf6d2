"""What ran: the trace, kernel classes, proofs, generated code, counters, FLOPs, intervals."""
