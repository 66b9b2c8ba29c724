"""What both NVML sources share, over a fake NVML module: lazy start, GPU enumeration, unsupported queries dropped
once, other errors read as NaN, and an NVML that cannot start."""

from __future__ import annotations

import logging
import math
import sys

import pynvml
import pytest

from producers.collectors import nvml_source
from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from schemas.records import CHANNEL_KINDS, Channel
from tests.producers.collectors.fake_nvml import FakeNvml, two_h100s


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
    monkeypatch.setattr(nvml_source, "NVML_LIBRARY", "libc.so.6")  # a library every Linux host loads
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert NvmlSlowCollector().collect()["gpu.pcie_link_gen_max.gpu0"] == 5.0


def test_a_host_without_the_driver_s_library_never_imports_pynvml(monkeypatch):
    monkeypatch.setattr(nvml_source, "NVML_LIBRARY", "libnvidia-ml-absent.so.1")
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    collector = NvmlSlowCollector()
    with pytest.raises(OSError, match="NVML Shared Library Not Found"):
        collector.collect()
    assert "pynvml" not in sys.modules
