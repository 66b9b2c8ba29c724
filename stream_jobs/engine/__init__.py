"""The pure, vectorised detection core: numpy in, numpy and dataclasses out; no I/O, no clock, no environment."""
