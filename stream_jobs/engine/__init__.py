"""The pure, vectorised detection core: numpy in, numpy and dataclasses out; no I/O, no clock, no environment."""

__all__ = [
    "attribution", "calibration", "channel_watch", "channels", "crosshost", "decide", "derived", "detectors",
    "ensemble", "features", "host_pipeline", "residuals", "retransmissions", "selection", "settings",
    "signatures", "thresholds", "verdicts", "watched_columns", "windows"
]
