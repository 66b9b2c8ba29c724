"""Detector arrays survive JSON exactly, in their own dtype, NaN and ±inf included; the older list form still reads."""

import json

import numpy as np
import pytest

from stream_jobs.engine.detectors.state import decode_array, encode_array


@pytest.mark.parametrize("values", [np.array([1.5, np.nan, np.inf, -np.inf, -0.0]),
                                    np.arange(12, dtype=np.float16).reshape(3, 4) / 7,
                                    np.array([[-3, 2**30]], dtype=np.int32), np.array([True, False]),
                                    np.array(42.0), np.zeros((0, 5), np.float32)])
def test_arrays_round_trip_through_strict_json_bit_for_bit(values):
    text = json.dumps(encode_array(values), allow_nan=False)
    decoded = decode_array(json.loads(text))
    assert decoded.dtype == values.dtype and decoded.shape == values.shape
    assert decoded.tobytes() == values.tobytes()


def test_the_older_list_of_values_form_still_decodes():
    decoded = decode_array({"shape": [2, 2], "values": [1.0, None, "inf", "-inf"]})
    np.testing.assert_array_equal(decoded, [[1.0, np.nan], [np.inf, -np.inf]])


def test_a_state_naming_a_non_number_dtype_is_refused():
    with pytest.raises(ValueError, match="not a number type"):
        decode_array({"shape": [1], "dtype": "|O", "base64": ""})
