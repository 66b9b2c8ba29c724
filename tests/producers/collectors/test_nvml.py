"""The two NVML collectors over a fake NVML module: fast and slow sources, NVLink totals and XID events."""

from __future__ import annotations

import math

import numpy as np
import pynvml

from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from producers.registry import CollectorRegistry


def test_fast_and_slow_channels_do_not_overlap(fake):
    assert not set(NvmlCollector(nvml=fake).collect()) & set(NvmlSlowCollector(nvml=fake).collect())
    assert (NvmlCollector.source, NvmlCollector.default_interval_s) == ("nvml", 0.2)
    assert (NvmlSlowCollector.source, NvmlSlowCollector.default_interval_s) == ("nvml-slow", 1.0)


def test_both_sources_share_one_registry_at_their_own_intervals(fake):
    registry = CollectorRegistry([NvmlCollector(nvml=fake), NvmlSlowCollector(nvml=fake)], "h100-node", "c", 0.1)
    values, changed = registry.sample(0)
    assert changed and len(values) == len(registry.catalog.channels) and np.isfinite(values).all()
    assert [source.every_ticks for source in registry.sources] == [2, 10]


def test_nvlink_sums_enabled_links_in_bytes(fake):
    del fake.gpus[0].nvlink_kib[17]  # link 17 reports disabled
    values = NvmlCollector(nvml=fake).collect()
    assert values["gpu.nvlink_tx_bytes.gpu0"] == sum(1000 + link for link in range(17)) * 1024
    assert values["gpu.nvlink_rx_bytes.gpu0"] == sum(2000 + link for link in range(17)) * 1024


def test_nvlink_field_error_reads_nan(fake):
    collector = NvmlCollector(nvml=fake)
    collector.collect()
    fake.gpus[0].failing["nvmlDeviceGetFieldValues"] = pynvml.NVML_ERROR_UNKNOWN
    assert math.isnan(collector.collect()["gpu.nvlink_tx_bytes.gpu0"])


def test_xid_events_are_counted_across_reads_per_gpu(fake):
    collector = NvmlCollector(nvml=fake)
    assert collector.collect()["gpu.xid_errors.gpu0"] == 0.0
    fake.raise_xid(0, 79)
    fake.raise_xid(0, 48)
    values = collector.collect()
    assert values["gpu.xid_errors.gpu0"] == 2.0 and values["gpu.xid_last.gpu0"] == 48.0
    assert values["gpu.xid_errors.gpu1"] == 0.0
    fake.raise_xid(1, 13)
    values = collector.collect()
    assert values["gpu.xid_errors.gpu0"] == 2.0 and values["gpu.xid_errors.gpu1"] == 1.0
    assert values["gpu.xid_last.gpu1"] == 13.0 and not fake.pending_xids


def test_xid_wait_failure_reads_nan_then_recovers(fake):
    collector = NvmlCollector(nvml=fake)
    collector.collect()
    fake.raise_xid(0, 94)
    fake.wait_error = pynvml.NVML_ERROR_UNKNOWN
    assert math.isnan(collector.collect()["gpu.xid_errors.gpu0"])
    fake.wait_error = None
    assert collector.collect()["gpu.xid_errors.gpu0"] == 1.0


def test_a_gpu_that_cannot_register_for_events_has_no_xid_channels(fake):
    fake.gpus[1].unsupported.add("nvmlDeviceRegisterEvents")
    values = NvmlCollector(nvml=fake).collect()
    assert "gpu.xid_errors.gpu0" in values and "gpu.xid_errors.gpu1" not in values


def test_close_shuts_nvml_down_once_and_frees_the_event_set(fake):
    collector = NvmlCollector(nvml=fake)
    collector.collect()
    collector.close()
    collector.close()
    assert fake.calls["nvmlShutdown"] == 1 and fake.event_sets_freed == 1
