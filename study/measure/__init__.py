"""How a cell's time and its host are measured: timing, the host gauge, host cost, load, power, memory, pinning, ceilings."""
