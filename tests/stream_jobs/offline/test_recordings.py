import dataclasses

import numpy as np
import pytest

from producers.recording import RecordingWriter
from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.records import Catalog, Channel, Frame
from stream_jobs.engine.host_pipeline import HostPipeline
from stream_jobs.offline.tables import TableError, load_table

T0_NS = 1_700_000_000_000_000_000
STEP_NS = 100_000_000


def record(path, *items):
    writer = RecordingWriter(path)
    for item in items:
        (writer.on_catalog if isinstance(item, Catalog) else writer.on_frame)(item)
    writer.close()
    return path


def test_a_recording_keeps_its_catalog_and_frames(tmp_path):
    catalog = synthetic_catalog("gpu-node-1", cluster="lab")
    frames = synthetic_frames(catalog, T0_NS, 20)
    table = load_table(record(tmp_path / "run.avro", catalog, *frames))
    host = table.hosts["gpu-node-1"]
    assert host.cluster == "lab" and host.interval_s == catalog.interval_s
    assert host.channels.names == catalog.names and host.channels.kinds == catalog.kinds
    assert host.channels.subsystems == tuple(c.subsystem for c in catalog.channels)
    assert host.timestamps_ns.tolist() == [f.timestamp_ns for f in frames]
    np.testing.assert_array_equal(host.values, np.vstack([f.values for f in frames]))
    assert table.repairs == {"sorted_rows": 0, "duplicate_rows": 0, "empty_cells": 0, "infinite_values": 0}


def test_recorded_channels_feed_the_engine_directly(tmp_path):
    catalog = synthetic_catalog("h")
    host = load_table(record(tmp_path / "run.avro", catalog, *synthetic_frames(catalog, T0_NS, 5))).hosts["h"]
    assert HostPipeline(host.channels).channels.cumulative.tolist() == [k == "counter" for k in catalog.kinds]


def test_frames_of_an_earlier_catalog_are_aligned_by_name(tmp_path):
    first = synthetic_catalog("h", gauges=2, counters=1)
    second = Catalog("h", "synthetic", (Channel("gpu.util.gpu0", "gpu", "gauge"),) + first.channels[::-1][:-1])
    early = synthetic_frames(first, T0_NS, 3)
    late = synthetic_frames(second, T0_NS + 3 * STEP_NS, 2)
    table = load_table(record(tmp_path / "run.avro", first, *early, second, *late))
    host = table.hosts["h"]
    assert host.channels.names == second.names
    assert host.channels.names == ("gpu.util.gpu0", "mem.MemTotal", "net.rx_bytes.eth0", "cpu.busy.cpu1")
    np.testing.assert_array_equal(host.values[:3, 0], [np.nan] * 3)
    np.testing.assert_array_equal(host.values[:3, 1:], np.vstack([f.values for f in early])[:, [3, 2, 1]])
    np.testing.assert_array_equal(host.values[3:], np.vstack([f.values for f in late]))
    assert table.repairs["empty_cells"] == 3


def test_several_hosts_and_out_of_order_frames(tmp_path):
    a, b = synthetic_catalog("a"), synthetic_catalog("b", gauges=1, counters=1)
    frames_a, frames_b = synthetic_frames(a, T0_NS, 4), synthetic_frames(b, T0_NS, 3)
    shuffled_a = [frames_a[1], frames_a[0], frames_a[2], frames_a[2], frames_a[3]]
    table = load_table(record(tmp_path / "run.avro", a, b, *frames_b, *shuffled_a))
    assert list(table.hosts) == ["a", "b"]
    assert table.hosts["a"].timestamps_ns.tolist() == [f.timestamp_ns for f in frames_a]
    assert table.hosts["b"].values.shape == (3, len(b.names))
    assert table.repairs["sorted_rows"] == 1 and table.repairs["duplicate_rows"] == 1


def test_a_frame_of_an_unrecorded_catalog_is_named(tmp_path):
    catalog = synthetic_catalog("h")
    stray = dataclasses.replace(synthetic_frames(catalog, T0_NS, 1)[0], catalog_version=12345)
    path = record(tmp_path / "run.avro", catalog, *synthetic_frames(catalog, T0_NS, 2), stray)
    with pytest.raises(TableError, match=r"run\.avro: record 4: frame of 'h' names catalog version 12345"):
        load_table(path)


def test_a_frame_whose_width_differs_from_its_catalog_is_named(tmp_path):
    catalog = synthetic_catalog("h")
    short = Frame("h", "synthetic", T0_NS + STEP_NS, 1, catalog.version, np.zeros(3))
    path = record(tmp_path / "run.avro", catalog, *synthetic_frames(catalog, T0_NS, 1), short)
    with pytest.raises(TableError, match=r"record 3: frame of 'h' has 3 values but its catalog has 13 channels"):
        load_table(path)


def test_frames_without_any_catalog_are_rejected(tmp_path):
    path = record(tmp_path / "run.avro", *synthetic_frames(synthetic_catalog("h"), T0_NS, 2))
    with pytest.raises(TableError, match="host 'h' has frames but the recording holds no catalog"):
        load_table(path)


def test_a_recording_without_frames_has_no_rows(tmp_path):
    with pytest.raises(TableError, match=r"run\.avro: the file has no rows"):
        load_table(record(tmp_path / "run.avro", synthetic_catalog("h")))


def test_a_file_that_is_not_avro_is_rejected(tmp_path):
    path = tmp_path / "run.avro"
    path.write_text("timestamp,a\n1,2\n")
    with pytest.raises(TableError, match=r"run\.avro: record 1: not a readable agent recording"):
        load_table(path)
