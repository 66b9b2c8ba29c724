"""Recordings: catalogs and frames written to a file come back in recorded order."""

import numpy as np

from producers.recording import RecordingWriter, read_recording
from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.records import Catalog, Frame


def test_catalogs_and_frames_come_back_in_recorded_order(tmp_path):
    first, second = synthetic_catalog("h", gauges=2), synthetic_catalog("h", gauges=3)
    frames = synthetic_frames(first, 10**18, 5) + synthetic_frames(second, 10**18 + 10**9, 5)
    writer = RecordingWriter(tmp_path / "run.avro")
    writer.on_catalog(first)
    for frame in frames[:5]:
        writer.on_frame(frame)
    writer.on_catalog(second)
    for frame in frames[5:]:
        writer.on_frame(frame)
    writer.close()
    items = list(read_recording(tmp_path / "run.avro"))
    assert [type(i) for i in items] == [Catalog] + [Frame] * 5 + [Catalog] + [Frame] * 5
    assert items[0] == first and items[6] == second
    read_frames = [i for i in items if isinstance(i, Frame)]
    assert all(np.array_equal(a.values, b.values) and a.sequence == b.sequence for a, b in zip(read_frames, frames))
