"""Window features per channel (paper §4.2): mean, standard deviation, minimum, maximum and linear trend."""

from __future__ import annotations

import warnings

import numpy as np

FEATURES = ("mean", "std", "min", "max", "slope")


def window_features(timestamps_ns: np.ndarray, signal: np.ndarray) -> np.ndarray:
    """Features of each channel over one window: (n, c) samples → (c, len(FEATURES)); NaN samples are ignored."""
    seconds = (timestamps_ns - timestamps_ns[0]).astype(np.float64) / 1e9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN channel yields NaN features, by design
        mean = np.nanmean(signal, axis=0)
        std = np.nanstd(signal, axis=0)
        low = np.nanmin(signal, axis=0)
        high = np.nanmax(signal, axis=0)
    return np.column_stack([mean, std, low, high, _slope(seconds, signal, mean)])


def _slope(seconds: np.ndarray, signal: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Least-squares slope per channel (units per second), over the samples that are not NaN."""
    present = ~np.isnan(signal)
    counts = present.sum(axis=0)
    t = np.where(present, seconds[:, None], 0.0)
    t_mean = np.divide(t.sum(axis=0), counts, out=np.zeros_like(mean), where=counts > 0)
    t_centred = np.where(present, seconds[:, None] - t_mean, 0.0)
    y_centred = np.where(present, signal - np.nan_to_num(mean), 0.0)
    denominator = (t_centred ** 2).sum(axis=0)
    slope = np.divide((t_centred * y_centred).sum(axis=0), denominator, out=np.full_like(mean, np.nan),
                      where=denominator > 0)
    return slope


def feature_names(channel_names: tuple[str, ...]) -> list[str]:
    """Names of the flattened feature vector, channel-major: 'cpu.user.cpu0:mean', …"""
    return [f"{name}:{feature}" for name in channel_names for feature in FEATURES]
