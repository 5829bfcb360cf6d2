"""One cell, in its own process: build, compile, check, time, profile, prove."""
