"""The NVML collectors over a fake NVML module: two H100-like GPUs, with pynvml's own constants and structs."""

from __future__ import annotations

import ctypes
import logging
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pynvml
import pytest
from hypothesis import given, strategies as st

from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from producers.registry import CollectorRegistry
from schemas.records import CHANNEL_KINDS, Channel

GIB = 1 << 30
NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
H100_NVLINKS = 18


class FakeNVMLError(Exception):
    """pynvml's NVMLError as the collectors see it: an exception carrying the NVML return code in `.value`."""

    def __init__(self, value: int):
        super().__init__(value)
        self.value = value

    def __str__(self):
        return pynvml.NVMLError._errcode_to_string.get(self.value, f"NVML error {self.value}")


@dataclass
class FakeGpu:
    """What one GPU answers; `unsupported` functions answer NOT_SUPPORTED, `failing` ones raise the given code or
    exception."""

    power_mw: int = 350_123
    energy_mj: int = 987_654_321
    utilization: tuple[int, int] = (87, 43)
    encoder: int = 0
    decoder: int = 12
    memory_used: int = 40 * GIB
    memory_total: int = 81_559 * (1 << 20)  # what an H100 80GB reports
    temperature: int = 54
    clocks: dict = field(default_factory=lambda: {pynvml.NVML_CLOCK_SM: 1980, pynvml.NVML_CLOCK_MEM: 2619})
    pcie: tuple[int, int, int, int] = (5, 16, 5, 16)  # current gen, width; max gen, width
    pcie_kb_per_s: dict = field(default_factory=lambda: {pynvml.NVML_PCIE_UTIL_TX_BYTES: 1_200_000,
                                                         pynvml.NVML_PCIE_UTIL_RX_BYTES: 850_000})
    throttle: int = pynvml.nvmlClocksThrottleReasonSwPowerCap
    ecc: dict = field(default_factory=lambda: {(pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                                pynvml.NVML_AGGREGATE_ECC): 3})
    retired_pages: dict = field(default_factory=dict)
    remapped_rows: tuple[int, int, int, int] = (2, 0, 0, 0)
    nvlink_kib: dict = field(default_factory=lambda: {link: (1000 + link, 2000 + link)
                                                      for link in range(H100_NVLINKS)})
    processes: list = field(default_factory=lambda: [SimpleNamespace(pid=4242, usedGpuMemory=20 * GIB),
                                                     SimpleNamespace(pid=4343, usedGpuMemory=10 * GIB)])
    unsupported: set = field(default_factory=lambda: {"nvmlDeviceGetRetiredPages"})  # H100 remaps rows instead
    failing: dict = field(default_factory=dict)
    struct: pynvml.struct_c_nvmlDevice_t = field(default_factory=pynvml.struct_c_nvmlDevice_t)


class FakeNvml:
    """The part of pynvml the collectors use, answering from FakeGpu objects and counting every call."""

    NVMLError = FakeNVMLError
    NVMLLibraryMismatchError = pynvml.NVMLLibraryMismatchError

    def __init__(self, gpus: list[FakeGpu], init_error: int | None = None):
        for name in dir(pynvml):
            if name.startswith(("NVML_", "nvmlEventType", "nvmlClocksThrottleReason")):
                value = getattr(pynvml, name)
                if isinstance(value, int):
                    setattr(self, name, value)
        self.gpus, self.init_error = gpus, init_error
        self.handles = [pynvml.c_nvmlDevice_t(gpu.struct) for gpu in gpus]
        self.calls: Counter = Counter()
        self.registered: set[int] = set()
        self.pending_xids: list[tuple[int, int]] = []
        self.wait_error: int | None = None
        self.event_sets_freed = 0

    def _gpu(self, function: str, handle) -> FakeGpu:
        """The GPU behind a handle, counting the call and raising what the GPU is set to raise."""
        index = next(i for i, known in enumerate(self.handles) if _address(known) == _address(handle))
        self.calls[function, index] += 1
        gpu = self.gpus[index]
        if function in gpu.unsupported:
            raise FakeNVMLError(NOT_SUPPORTED)
        failure = gpu.failing.get(function)
        if isinstance(failure, Exception):
            raise failure
        if failure is not None:
            raise FakeNVMLError(failure)
        return gpu

    def nvmlInit(self):
        self.calls["nvmlInit"] += 1
        if self.init_error is not None:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self):
        self.calls["nvmlShutdown"] += 1

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        return self.handles[index]

    def nvmlDeviceGetUtilizationRates(self, handle):
        gpu_util, memory_util = self._gpu("nvmlDeviceGetUtilizationRates", handle).utilization
        return pynvml.c_nvmlUtilization_t(gpu=gpu_util, memory=memory_util)

    def nvmlDeviceGetEncoderUtilization(self, handle):
        return [self._gpu("nvmlDeviceGetEncoderUtilization", handle).encoder, 167_000]

    def nvmlDeviceGetDecoderUtilization(self, handle):
        return [self._gpu("nvmlDeviceGetDecoderUtilization", handle).decoder, 167_000]

    def nvmlDeviceGetMemoryInfo(self, handle):
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        return pynvml.c_nvmlMemory_t(total=gpu.memory_total, free=gpu.memory_total - gpu.memory_used,
                                     used=gpu.memory_used)

    def nvmlDeviceGetPowerUsage(self, handle):
        return self._gpu("nvmlDeviceGetPowerUsage", handle).power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        return self._gpu("nvmlDeviceGetTotalEnergyConsumption", handle).energy_mj

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return self._gpu("nvmlDeviceGetTemperature", handle).temperature

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return self._gpu("nvmlDeviceGetClockInfo", handle).clocks[clock]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle):
        return self._gpu("nvmlDeviceGetCurrPcieLinkGeneration", handle).pcie[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle):
        return self._gpu("nvmlDeviceGetCurrPcieLinkWidth", handle).pcie[1]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle):
        return self._gpu("nvmlDeviceGetMaxPcieLinkGeneration", handle).pcie[2]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle):
        return self._gpu("nvmlDeviceGetMaxPcieLinkWidth", handle).pcie[3]

    def nvmlDeviceGetPcieThroughput(self, handle, counter):
        return self._gpu("nvmlDeviceGetPcieThroughput", handle).pcie_kb_per_s[counter]

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self._gpu("nvmlDeviceGetCurrentClocksThrottleReasons", handle).throttle

    def nvmlDeviceGetTotalEccErrors(self, handle, error_type, counter_type):
        return self._gpu("nvmlDeviceGetTotalEccErrors", handle).ecc.get((error_type, counter_type), 0)

    def nvmlDeviceGetRetiredPages(self, handle, cause):
        return self._gpu("nvmlDeviceGetRetiredPages", handle).retired_pages.get(cause, [])

    def nvmlDeviceGetRemappedRows(self, handle):
        return self._gpu("nvmlDeviceGetRemappedRows", handle).remapped_rows

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return self._gpu("nvmlDeviceGetComputeRunningProcesses", handle).processes

    def nvmlDeviceGetNvLinkState(self, handle, link):
        gpu = self._gpu("nvmlDeviceGetNvLinkState", handle)
        if link >= H100_NVLINKS:
            raise FakeNVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return pynvml.NVML_FEATURE_ENABLED if link in gpu.nvlink_kib else pynvml.NVML_FEATURE_DISABLED

    def nvmlDeviceGetFieldValues(self, handle, field_ids):
        gpu = self._gpu("nvmlDeviceGetFieldValues", handle)
        values = (pynvml.c_nvmlFieldValue_t * len(field_ids))()
        for value, (field_id, link) in zip(values, field_ids):
            value.fieldId, value.scopeId = field_id, link
            value.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            value.value.ullVal = gpu.nvlink_kib[link][field_id == pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX]
        return values

    def nvmlEventSetCreate(self):
        return "event-set"

    def nvmlEventSetFree(self, event_set):
        self.event_sets_freed += 1

    def nvmlDeviceRegisterEvents(self, handle, event_types, event_set):
        self._gpu("nvmlDeviceRegisterEvents", handle)
        assert event_types == pynvml.nvmlEventTypeXidCriticalError and event_set == "event-set"
        self.registered.add(self.handles.index(handle))

    def nvmlEventSetWait(self, event_set, timeout_ms):
        assert timeout_ms == 0
        if self.wait_error is not None:
            raise FakeNVMLError(self.wait_error)
        if not self.pending_xids:
            raise FakeNVMLError(pynvml.NVML_ERROR_TIMEOUT)
        index, xid = self.pending_xids.pop(0)
        event = pynvml.c_nvmlEventData_t(eventType=pynvml.nvmlEventTypeXidCriticalError, eventData=xid)
        event.device = self.handles[index]  # read back as a new pointer object, as from the real library
        return event

    def raise_xid(self, index: int, xid: int) -> None:
        """Queue a critical XID event, delivered only for a GPU registered for them."""
        if index in self.registered:
            self.pending_xids.append((index, xid))


def _address(handle) -> int:
    """The device address a pynvml handle points at."""
    return ctypes.cast(handle, ctypes.c_void_p).value


def two_h100s() -> list[FakeGpu]:
    """GPU 0 an H100 SXM with 18 NVLinks; GPU 1 without encoder or NVLink, idle, with no ECC errors."""
    lacking = {"nvmlDeviceGetRetiredPages", "nvmlDeviceGetEncoderUtilization", "nvmlDeviceGetNvLinkState"}
    return [FakeGpu(), FakeGpu(power_mw=71_250, utilization=(0, 0), memory_used=0, processes=[], ecc={},
                               remapped_rows=(0, 0, 0, 0), throttle=pynvml.nvmlClocksThrottleReasonGpuIdle,
                               nvlink_kib={}, unsupported=lacking)]


@pytest.fixture
def fake() -> FakeNvml:
    return FakeNvml(two_h100s())


FAST_METRICS = {
    "gpu.utilization": ("gauge", "%"), "gpu.memory_utilization": ("gauge", "%"),
    "gpu.encoder_utilization": ("gauge", "%"), "gpu.decoder_utilization": ("gauge", "%"),
    "gpu.memory_used": ("gauge", "bytes"), "gpu.memory_free": ("gauge", "bytes"),
    "gpu.memory_total": ("static", "bytes"), "gpu.power": ("gauge", "W"), "gpu.energy": ("counter", "J"),
    "gpu.temperature": ("gauge", "celsius"), "gpu.clock_sm": ("gauge", "MHz"), "gpu.clock_mem": ("gauge", "MHz"),
    "gpu.pcie_link_gen": ("gauge", "generation"), "gpu.pcie_link_width": ("gauge", "lanes"),
    "gpu.throttle_reasons": ("gauge", "bitmask"), "gpu.throttle_sw_power_cap": ("gauge", "flag"),
    "gpu.throttle_hw_slowdown": ("gauge", "flag"), "gpu.throttle_sw_thermal_slowdown": ("gauge", "flag"),
    "gpu.throttle_hw_thermal_slowdown": ("gauge", "flag"), "gpu.throttle_power_brake": ("gauge", "flag"),
    "gpu.nvlink_tx_bytes": ("counter", "bytes"), "gpu.nvlink_rx_bytes": ("counter", "bytes"),
    "gpu.xid_errors": ("event", "errors"), "gpu.xid_last": ("gauge", "code"),
}
SLOW_METRICS = {
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


@pytest.mark.parametrize("collector_class", [NvmlCollector, NvmlSlowCollector])
def test_contract_every_channel_is_a_valid_gpu_channel_with_a_finite_float(fake, collector_class):
    collector = collector_class(nvml=fake)
    assert collector.available()
    for name, value in collector.collect().items():
        assert isinstance(value, float) and math.isfinite(value), name
        channel = collector.describe(name)
        assert isinstance(channel, Channel) and channel.name == name
        assert channel.subsystem == "gpu" and channel.kind in CHANNEL_KINDS and channel.device in ("gpu0", "gpu1")


@pytest.mark.parametrize("collector_class", [NvmlCollector, NvmlSlowCollector])
def test_repeated_reads_of_unchanged_gpus_are_identical(fake, collector_class):
    collector = collector_class(nvml=fake)
    first, second = collector.read(), collector.read()
    assert first.names is second.names
    assert collector.collect() == collector.collect()


def test_fast_and_slow_channels_do_not_overlap(fake):
    assert not set(NvmlCollector(nvml=fake).collect()) & set(NvmlSlowCollector(nvml=fake).collect())
    assert (NvmlCollector.source, NvmlCollector.default_interval_s) == ("nvml", 0.2)
    assert (NvmlSlowCollector.source, NvmlSlowCollector.default_interval_s) == ("nvml-slow", 1.0)


def test_both_sources_share_one_registry_at_their_own_intervals(fake):
    registry = CollectorRegistry([NvmlCollector(nvml=fake), NvmlSlowCollector(nvml=fake)], "h100-node", "c", 0.1)
    values, changed = registry.sample(0)
    assert changed and len(values) == len(registry.catalog.channels) and np.isfinite(values).all()
    assert [source.every_ticks for source in registry.sources] == [2, 10]


def test_units_are_converted_from_nvml(fake):
    fast = NvmlCollector(nvml=fake).collect()
    slow = NvmlSlowCollector(nvml=fake).collect()
    assert fast["gpu.power.gpu0"] == 350.123 and fast["gpu.power.gpu1"] == 71.25
    assert fast["gpu.energy.gpu0"] == 987_654.321
    assert fast["gpu.memory_total.gpu0"] == 81_559 * (1 << 20) and fast["gpu.memory_used.gpu0"] == 40 * GIB
    assert fast["gpu.decoder_utilization.gpu0"] == 12.0 and fast["gpu.utilization.gpu0"] == 87.0
    assert fast["gpu.clock_sm.gpu0"] == 1980.0 and fast["gpu.pcie_link_gen.gpu0"] == 5.0
    assert slow["gpu.pcie_tx_throughput.gpu0"] == 1_200_000 * 1024
    assert slow["gpu.pcie_rx_throughput.gpu0"] == 850_000 * 1024
    assert slow["gpu.pcie_link_width_max.gpu1"] == 16.0


def test_nvlink_sums_enabled_links_in_bytes(fake):
    del fake.gpus[0].nvlink_kib[17]  # link 17 reports disabled
    values = NvmlCollector(nvml=fake).collect()
    assert values["gpu.nvlink_tx_bytes.gpu0"] == sum(1000 + link for link in range(17)) * 1024
    assert values["gpu.nvlink_rx_bytes.gpu0"] == sum(2000 + link for link in range(17)) * 1024


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


def test_an_unsupported_query_is_asked_once_and_never_again(fake):
    fast, slow = NvmlCollector(nvml=fake), NvmlSlowCollector(nvml=fake)
    for _ in range(5):
        fast.collect()
        slow.collect()
    assert fake.calls["nvmlDeviceGetEncoderUtilization", 1] == 1
    assert fake.calls["nvmlDeviceGetEncoderUtilization", 0] == 5
    assert fake.calls["nvmlDeviceGetNvLinkState", 1] == 1
    assert fake.calls["nvmlDeviceGetFieldValues", 1] == 0 and fake.calls["nvmlDeviceGetFieldValues", 0] == 5
    assert fake.calls["nvmlDeviceGetRetiredPages", 0] == 2  # one per cause
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 4 and fake.calls["nvmlInit"] == 2


def test_other_errors_read_nan_once_logged_and_recover(fake, caplog):
    collector = NvmlCollector(nvml=fake)
    names = set(collector.collect())
    fake.gpus[0].failing["nvmlDeviceGetPowerUsage"] = pynvml.NVML_ERROR_GPU_IS_LOST
    with caplog.at_level(logging.WARNING):
        failed = [collector.collect() for _ in range(3)]
    assert all(set(values) == names and math.isnan(values["gpu.power.gpu0"]) for values in failed)
    assert failed[0]["gpu.power.gpu1"] == 71.25 and failed[0]["gpu.temperature.gpu0"] == 54.0
    assert sum("gpu0 power failed" in record.getMessage() for record in caplog.records) == 1
    del fake.gpus[0].failing["nvmlDeviceGetPowerUsage"]
    assert collector.collect()["gpu.power.gpu0"] == 350.123


def test_not_supported_after_answering_reads_nan_instead_of_dropping_the_channel(fake):
    collector = NvmlCollector(nvml=fake)
    collector.collect()
    fake.gpus[0].unsupported.add("nvmlDeviceGetTemperature")
    assert math.isnan(collector.collect()["gpu.temperature.gpu0"])


def test_a_function_missing_from_the_library_costs_only_its_channels(fake):
    fake.gpus[0].failing["nvmlDeviceGetCurrentClocksThrottleReasons"] = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
    values = NvmlCollector(nvml=fake).collect()
    assert "gpu.throttle_reasons.gpu0" not in values and "gpu.throttle_reasons.gpu1" in values


def test_an_unversioned_function_missing_from_an_old_driver_costs_only_its_channels(fake):
    fake.gpus[0].failing["nvmlDeviceGetComputeRunningProcesses"] = pynvml.NVMLLibraryMismatchError("old driver")
    values = NvmlSlowCollector(nvml=fake).collect()
    assert "gpu.processes.gpu0" not in values and values["gpu.processes.gpu1"] == 0.0


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


@pytest.mark.parametrize("collector_class", [NvmlCollector, NvmlSlowCollector])
def test_init_failure_makes_the_source_unavailable_without_retrying(collector_class, caplog):
    fake = FakeNvml(two_h100s(), init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    collector = collector_class(nvml=fake)
    with caplog.at_level(logging.WARNING):
        assert not collector.available()
    assert "Driver Not Loaded" in caplog.text
    with pytest.raises(OSError):
        collector.collect()
    assert fake.calls["nvmlInit"] == 1 and fake.calls["nvmlShutdown"] == 0


def test_no_gpus_makes_the_source_unavailable_and_releases_nvml():
    fake = FakeNvml([])
    assert not NvmlCollector(nvml=fake).available()
    assert fake.calls["nvmlShutdown"] == 1


def test_missing_pynvml_makes_the_source_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert not NvmlCollector().available()


def test_pynvml_is_imported_lazily_when_no_module_is_injected(monkeypatch, fake):
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert NvmlSlowCollector().collect()["gpu.pcie_link_gen_max.gpu0"] == 5.0


def test_close_shuts_nvml_down_once_and_frees_the_event_set(fake):
    collector = NvmlCollector(nvml=fake)
    collector.collect()
    collector.close()
    collector.close()
    assert fake.calls["nvmlShutdown"] == 1 and fake.event_sets_freed == 1
