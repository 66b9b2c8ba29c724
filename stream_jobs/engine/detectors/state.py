"""Fitted detectors as plain JSON values, so a baseline survives a worker restart."""

from __future__ import annotations

import base64

import numpy as np


def encode_array(values: np.ndarray) -> dict:
    """Shape, dtype and little-endian bytes (base64) of an array: exact, NaN and ±inf included, and a few hundred
    kilobytes of a baseline cost milliseconds to write rather than a list of floats each."""
    array = np.asarray(values)
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return {"shape": list(array.shape), "dtype": little.dtype.str,
            "base64": base64.b64encode(little.tobytes()).decode("ascii")}


def decode_array(encoded: dict) -> np.ndarray:
    """Inverse of `encode_array`; also reads the older form with a list of values (None for NaN, "±inf")."""
    if "base64" in encoded:
        dtype = np.dtype(encoded["dtype"])
        if dtype.kind not in "biuf":
            raise ValueError(f"array dtype {encoded['dtype']!r} is not a number type")
        flat = np.frombuffer(base64.b64decode(encoded["base64"]), dtype=dtype)
        return flat.astype(dtype.newbyteorder("="), copy=True).reshape(encoded["shape"])
    flat = [np.nan if value is None else float(value) for value in encoded["values"]]
    return np.array(flat, dtype=np.float64).reshape(encoded["shape"])


def check_state(state: dict, name: str) -> None:
    """Reject a state written by another detector, with what was found and what was expected."""
    if state.get("name") != name:
        raise ValueError(f"state is for detector {state.get('name')!r}; expected {name!r}")
