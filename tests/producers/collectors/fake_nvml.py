"""A fake NVML module for the NVML collectors' tests: H100-like GPUs, with pynvml's own constants and structs."""

from __future__ import annotations

import ctypes
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

import pynvml

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
