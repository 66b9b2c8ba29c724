"""Offline detection over recorded tables: loading inputs, writing window verdicts, comparing runs (paper §5.5)."""
