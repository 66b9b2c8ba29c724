"""Fitted detectors as plain JSON values, so a baseline survives a worker restart."""

from __future__ import annotations

import numpy as np


def encode_array(values: np.ndarray) -> dict:
    """Shape and flat values of a float array; strict JSON has no NaN or ±inf, so they become None, "inf", "-inf"."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    words = np.where(np.isnan(flat), None, np.where(flat > 0, "inf", "-inf").astype(object))
    return {"shape": list(np.shape(values)), "values": np.where(np.isfinite(flat), flat.astype(object), words).tolist()}


def decode_array(encoded: dict) -> np.ndarray:
    """Inverse of `encode_array`."""
    flat = [np.nan if value is None else float(value) for value in encoded["values"]]
    return np.array(flat, dtype=np.float64).reshape(encoded["shape"])


def check_state(state: dict, name: str) -> None:
    """Reject a state written by another detector, with what was found and what was expected."""
    if state.get("name") != name:
        raise ValueError(f"state is for detector {state.get('name')!r}; expected {name!r}")
