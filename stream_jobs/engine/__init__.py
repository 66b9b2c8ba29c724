"""The pure, vectorised detection core: numpy in, numpy and dataclasses out; no I/O, no clock, no environment."""

__all__ = [
    "attribution", "calibration", "channel_watch", "channels", "crosshost", "derived", "detectors", "ensemble",
    "features", "host_pipeline", "incidents", "peer_effects", "residuals", "retransmissions", "selection", "settings",
    "signatures", "thresholds", "verdicts", "watched_columns", "windows"
]
