"""InfinibandCollector over two hand-built mlx5 HCAs (one InfiniBand, one RoCE port), an empty root and garbage."""

import math
import shutil

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.infiniband import InfinibandCollector, counter_kind, counter_unit
from tests.conftest import FIXTURES

LARGE = FIXTURES / "sysfs-large"
PORT0 = "class/infiniband/mlx5_0/ports/1"
PORT_COUNTERS = 21  # the extended PMA set with port_xmit_wait
IB_HW_COUNTERS = 19  # mlx5 q-counters of an InfiniBand port, lifespan left out
ROCE_HW_COUNTERS = 29  # and the congestion, RoCE retransmission and ICRC counters of an Ethernet port


def test_two_hcas_give_every_counter_rate_and_state_per_port():
    collector = InfinibandCollector(sysfs=LARGE)
    values = collector.collect()
    per_device = {}
    for name in values:
        per_device.setdefault(collector.describe(name).device, []).append(name)
    assert len(per_device["mlx5_0_1"]) == PORT_COUNTERS + IB_HW_COUNTERS + 2
    assert len(per_device["mlx5_1_1"]) == PORT_COUNTERS + ROCE_HW_COUNTERS + 2
    assert len(values) == 94
    assert "ib.lifespan.mlx5_0_1" not in values
    assert list(values)[-2:] == ["ib.state.mlx5_0_1", "ib.state.mlx5_1_1"]


def test_data_counters_are_scaled_to_bytes():
    collector = InfinibandCollector(sysfs=LARGE)
    values = collector.collect()
    octets_by_4 = float((LARGE / PORT0 / "counters/port_rcv_data").read_text())
    assert values["ib.port_rcv_data.mlx5_0_1"] == 4 * octets_by_4
    packets = float((LARGE / PORT0 / "counters/port_rcv_packets").read_text())
    assert values["ib.port_rcv_packets.mlx5_0_1"] == packets
    assert collector.describe("ib.port_xmit_data.mlx5_1_1").unit == "bytes"


def test_rate_and_state_are_parsed_from_their_text():
    collector = InfinibandCollector(sysfs=LARGE)
    values = collector.collect()
    assert values["ib.rate_gbps.mlx5_0_1"] == 200.0 and values["ib.rate_gbps.mlx5_1_1"] == 100.0
    assert values["ib.state.mlx5_0_1"] == 4.0
    rate, state = collector.describe("ib.rate_gbps.mlx5_0_1"), collector.describe("ib.state.mlx5_0_1")
    assert (rate.kind, rate.unit, rate.subsystem, rate.device) == ("static", "Gb/s", "network", "mlx5_0_1")
    assert state.kind == "gauge"


@pytest.mark.parametrize("name, kind, unit", [
    ("port_xmit_data", "counter", "bytes"), ("unicast_rcv_packets", "counter", "packets"),
    ("rx_write_requests", "counter", "requests"), ("symbol_error", "event", "events"),
    ("port_xmit_wait", "event", "ticks"), ("VL15_dropped", "event", "events"),
    ("np_ecn_marked_roce_packets", "event", "packets"), ("rp_cnp_handled", "event", "events"),
    ("out_of_buffer", "event", "events"), ("req_remote_invalid_request", "event", "events")])
def test_counter_kinds_and_units(name, kind, unit):
    assert (counter_kind(name), counter_unit(name)) == (kind, unit)
    collector = InfinibandCollector(sysfs=LARGE)
    collector.collect()
    assert collector.describe(f"ib.{name}.mlx5_1_1").kind == kind


def test_a_missing_or_unreadable_attribute_costs_one_channel(tmp_path):
    shutil.copytree(LARGE / "class/infiniband", tmp_path / "class/infiniband")
    port = tmp_path / PORT0
    (port / "counters/symbol_error").write_text("N/A (no PMA)\n")
    (port / "hw_counters/out_of_buffer").unlink()
    (port / "hw_counters/out_of_buffer").mkdir()
    (port / "state").unlink()
    (port / "rate").write_text("\n")
    values = InfinibandCollector(sysfs=tmp_path).collect()
    assert len(values) == 94
    assert {name for name, value in values.items() if math.isnan(value)} == {
        "ib.symbol_error.mlx5_0_1", "ib.out_of_buffer.mlx5_0_1", "ib.state.mlx5_0_1", "ib.rate_gbps.mlx5_0_1"}


def test_host_without_hcas_is_unavailable(tmp_path):
    assert not InfinibandCollector(sysfs=tmp_path).available()
    (tmp_path / "class/infiniband").mkdir(parents=True)
    assert not InfinibandCollector(sysfs=tmp_path).available()


def test_names_tuple_is_the_same_object_between_reads():
    collector = InfinibandCollector(sysfs=LARGE)
    assert collector.read().names is collector.read().names
    collector.close()


@pytest.fixture(scope="module")
def hca_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys")
    shutil.copytree(LARGE / "class/infiniband", root / "class/infiniband")
    return root


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=48), st.sampled_from(["state", "rate", "counters/port_rcv_data", "hw_counters/lifespan"]))
def test_garbage_in_one_attribute_never_crashes_a_read(hca_copy, garbage, attribute):
    path = hca_copy / PORT0 / attribute
    original = (LARGE / PORT0 / attribute).read_bytes()
    collector = InfinibandCollector(sysfs=hca_copy)
    before = collector.read()
    path.write_bytes(garbage)
    try:
        after = collector.read()
    finally:
        path.write_bytes(original)
        collector.close()
    assert after.names is before.names
    assert all(isinstance(v, float) for v in after.values)
    unchanged = [index for index, name in enumerate(after.names) if name.endswith("mlx5_1_1")]
    assert np.array_equal(np.asarray(after.values)[unchanged], np.asarray(before.values)[unchanged])
