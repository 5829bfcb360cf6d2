"""The sweep: check it, take its dir, run every cell from one warm parent on N slots, sum it up."""
