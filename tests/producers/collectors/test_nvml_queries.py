"""The NVML query tables over a fake NVML module: each answer's channels, units, kinds and conversions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pynvml
import pytest
from hypothesis import given, strategies as st

from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from schemas.records import Channel
from tests.producers.collectors.fake_nvml import GIB, FakeGpu, FakeNvml

FAST_METRICS = {
    "gpu.utilization": ("gauge", "%"), "gpu.memory_utilization": ("gauge", "%"),
    "gpu.encoder_utilization": ("gauge", "%"), "gpu.decoder_utilization": ("gauge", "%"),
    "gpu.memory_used": ("gauge", "bytes"), "gpu.memory_free": ("gauge", "bytes"),
    "gpu.memory_total": ("static", "bytes"), "gpu.power": ("gauge", "W"),
    "gpu.temperature": ("gauge", "celsius"), "gpu.clock_sm": ("gauge", "MHz"), "gpu.clock_mem": ("gauge", "MHz"),
    "gpu.pcie_link_gen": ("gauge", "generation"), "gpu.pcie_link_width": ("gauge", "lanes"),
    "gpu.throttle_reasons": ("gauge", "bitmask"), "gpu.throttle_sw_power_cap": ("gauge", "flag"),
    "gpu.throttle_hw_slowdown": ("gauge", "flag"), "gpu.throttle_sw_thermal_slowdown": ("gauge", "flag"),
    "gpu.throttle_hw_thermal_slowdown": ("gauge", "flag"), "gpu.throttle_power_brake": ("gauge", "flag"),
    "gpu.nvlink_tx_bytes": ("counter", "bytes"), "gpu.nvlink_rx_bytes": ("counter", "bytes"),
    "gpu.xid_errors": ("event", "errors"), "gpu.xid_last": ("gauge", "code"),
}
SLOW_METRICS = {
    "gpu.energy": ("counter", "J"),
    "gpu.pcie_tx_throughput": ("gauge", "bytes/s"), "gpu.pcie_rx_throughput": ("gauge", "bytes/s"),
    "gpu.pcie_link_gen_max": ("static", "generation"), "gpu.pcie_link_width_max": ("static", "lanes"),
    "gpu.ecc_corrected_volatile": ("event", "errors"), "gpu.ecc_uncorrected_volatile": ("event", "errors"),
    "gpu.ecc_corrected_aggregate": ("event", "errors"), "gpu.ecc_uncorrected_aggregate": ("event", "errors"),
    "gpu.remapped_rows_corrected": ("event", "rows"), "gpu.remapped_rows_uncorrected": ("event", "rows"),
    "gpu.remapped_rows_pending": ("gauge", "flag"), "gpu.remapped_rows_failure": ("gauge", "flag"),
    "gpu.processes": ("gauge", "processes"), "gpu.process_memory_used": ("gauge", "bytes"),
}
GPU1_LACKS = {"gpu.encoder_utilization", "gpu.nvlink_tx_bytes", "gpu.nvlink_rx_bytes"}
BOTH = ((NvmlCollector, FAST_METRICS), (NvmlSlowCollector, SLOW_METRICS))


@pytest.mark.parametrize("collector_class, metrics", BOTH)
def test_channels_per_gpu_with_units_kinds_and_subsystem(fake, collector_class, metrics):
    collector = collector_class(nvml=fake)
    values = collector.collect()
    expected = {f"{metric}.gpu0" for metric in metrics} | {f"{metric}.gpu1" for metric in set(metrics) - GPU1_LACKS}
    assert set(values) == expected
    for name in values:
        metric, device = name.rsplit(".", 1)
        assert collector.describe(name) == Channel(name, "gpu", *metrics[metric], device)


def test_units_are_converted_from_nvml(fake):
    fast = NvmlCollector(nvml=fake).collect()
    slow = NvmlSlowCollector(nvml=fake).collect()
    assert fast["gpu.power.gpu0"] == 350.123 and fast["gpu.power.gpu1"] == 71.25
    assert slow["gpu.energy.gpu0"] == 987_654.321
    assert fast["gpu.memory_total.gpu0"] == 81_559 * (1 << 20) and fast["gpu.memory_used.gpu0"] == 40 * GIB
    assert fast["gpu.decoder_utilization.gpu0"] == 12.0 and fast["gpu.utilization.gpu0"] == 87.0
    assert fast["gpu.clock_sm.gpu0"] == 1980.0 and fast["gpu.pcie_link_gen.gpu0"] == 5.0
    assert slow["gpu.pcie_tx_throughput.gpu0"] == 1_200_000 * 1024
    assert slow["gpu.pcie_rx_throughput.gpu0"] == 850_000 * 1024
    assert slow["gpu.pcie_link_width_max.gpu1"] == 16.0


def test_slow_counts_errors_rows_and_process_memory(fake):
    fake.gpus[0].processes.append(SimpleNamespace(pid=4444, usedGpuMemory=None))  # usage NVML cannot tell
    values = NvmlSlowCollector(nvml=fake).collect()
    assert values["gpu.ecc_corrected_aggregate.gpu0"] == 3.0 and values["gpu.ecc_corrected_volatile.gpu0"] == 0.0
    assert values["gpu.remapped_rows_corrected.gpu0"] == 2.0 and values["gpu.remapped_rows_pending.gpu0"] == 0.0
    assert values["gpu.processes.gpu0"] == 3.0 and values["gpu.process_memory_used.gpu0"] == 30 * GIB
    assert values["gpu.processes.gpu1"] == 0.0 and values["gpu.process_memory_used.gpu1"] == 0.0


def test_retired_pages_are_counted_where_the_gpu_retires_pages():
    older = FakeGpu(unsupported=set(), retired_pages={
        pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS: [0x1000, 0x2000],
        pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: [0x3000]})
    values = NvmlSlowCollector(nvml=FakeNvml([older])).collect()
    assert values["gpu.retired_pages_sbe.gpu0"] == 2.0 and values["gpu.retired_pages_dbe.gpu0"] == 1.0


@given(st.integers(min_value=0, max_value=pynvml.nvmlClocksThrottleReasonAll))
def test_throttle_flags_follow_pynvml_bits(mask):
    fake = FakeNvml([FakeGpu(throttle=mask)])
    values = NvmlCollector(nvml=fake).collect()
    assert values["gpu.throttle_reasons.gpu0"] == mask
    bits = {"sw_power_cap": pynvml.nvmlClocksThrottleReasonSwPowerCap,
            "hw_slowdown": pynvml.nvmlClocksThrottleReasonHwSlowdown,
            "sw_thermal_slowdown": pynvml.nvmlClocksThrottleReasonSwThermalSlowdown,
            "hw_thermal_slowdown": pynvml.nvmlClocksThrottleReasonHwThermalSlowdown,
            "power_brake": pynvml.nvmlClocksThrottleReasonHwPowerBrakeSlowdown}
    for reason, bit in bits.items():
        assert values[f"gpu.throttle_{reason}.gpu0"] == float(bool(mask & bit))


def test_a_real_h100_answers_every_query_but_nvlink_in_its_own_source():
    """The channels the collectors read from a real H100 (one GPU, no NVLink; driver 580): each in the source the
    tables put it in, with every value finite."""
    capture = json.loads((Path(__file__).parents[2] / "fixtures" / "nvml" / "h100-driver580.json").read_text())
    for source, metrics in (("fast", FAST_METRICS), ("slow", SLOW_METRICS)):
        read = {name.rsplit(".", 1)[0] for name in capture[source]}
        assert read == set(metrics) - {"gpu.nvlink_tx_bytes", "gpu.nvlink_rx_bytes"}
        assert all(math.isfinite(value) for value in capture[source].values())
