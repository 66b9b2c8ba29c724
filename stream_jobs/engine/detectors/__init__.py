"""Detectors share one interface: fit(X) on baseline windows, score(X) → array (high = anomalous)."""
