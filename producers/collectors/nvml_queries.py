"""What NVML is asked of each GPU: the fast and the slow query tables, and how each answer becomes channels."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

SUBSYSTEM = "gpu"
# Bits of nvmlClocksThrottleReason* in nvml.h; a stable part of the NVML ABI.
THROTTLE_FLAGS = (("gpu.throttle_sw_power_cap", 0x04), ("gpu.throttle_hw_slowdown", 0x08),
                  ("gpu.throttle_sw_thermal_slowdown", 0x20), ("gpu.throttle_hw_thermal_slowdown", 0x40),
                  ("gpu.throttle_power_brake", 0x80))
KIB = 1024


def _identity(answer: Any) -> Any:
    """The answer itself, for calls that return one number."""
    return answer


def _has_bit(bit: int, mask: int) -> bool:
    """Whether one reason bit is set in a throttle-reasons mask."""
    return bool(int(mask) & bit)


def _process_memory(processes: list) -> int:
    """Summed GPU memory of the processes whose usage NVML reports (None where it cannot, e.g. under WDDM)."""
    return sum(p.usedGpuMemory for p in processes if p.usedGpuMemory is not None)


@dataclass(frozen=True)
class Output:
    """One channel filled from a query's answer: pick the number, then scale it into the channel's unit."""

    metric: str
    kind: str
    unit: str
    pick: Callable[[Any], float] = _identity
    scale: float = 1.0

    def value(self, answer: Any) -> float:
        """The channel's value in its unit."""
        return float(self.pick(answer)) * self.scale


@dataclass(frozen=True)
class Query:
    """One NVML call per GPU (the handle, then NVML constants named in `constants`) and the channels it fills."""

    key: str
    function: str
    constants: tuple[str, ...]
    outputs: tuple[Output, ...]


def _query(key: str, function: str, *constants: str, outputs: tuple[Output, ...]) -> Query:
    """A query, with its NVML constants listed inline."""
    return Query(key, function, constants, outputs)


def _gauge(metric: str, unit: str, pick: Callable[[Any], float] = _identity, scale: float = 1.0) -> Output:
    """A gauge output."""
    return Output(metric, "gauge", unit, pick, scale)


FAST_QUERIES = (
    _query("utilization", "nvmlDeviceGetUtilizationRates",
           outputs=(_gauge("gpu.utilization", "%", operator.attrgetter("gpu")),
                    _gauge("gpu.memory_utilization", "%", operator.attrgetter("memory")))),
    _query("encoder", "nvmlDeviceGetEncoderUtilization",
           outputs=(_gauge("gpu.encoder_utilization", "%", operator.itemgetter(0)),)),
    _query("decoder", "nvmlDeviceGetDecoderUtilization",
           outputs=(_gauge("gpu.decoder_utilization", "%", operator.itemgetter(0)),)),
    _query("memory", "nvmlDeviceGetMemoryInfo",
           outputs=(_gauge("gpu.memory_used", "bytes", operator.attrgetter("used")),
                    _gauge("gpu.memory_free", "bytes", operator.attrgetter("free")),
                    Output("gpu.memory_total", "static", "bytes", operator.attrgetter("total")))),
    _query("power", "nvmlDeviceGetPowerUsage", outputs=(_gauge("gpu.power", "W", scale=1e-3),)),
    _query("temperature", "nvmlDeviceGetTemperature", "NVML_TEMPERATURE_GPU",
           outputs=(_gauge("gpu.temperature", "celsius"),)),
    _query("clock_sm", "nvmlDeviceGetClockInfo", "NVML_CLOCK_SM", outputs=(_gauge("gpu.clock_sm", "MHz"),)),
    _query("clock_mem", "nvmlDeviceGetClockInfo", "NVML_CLOCK_MEM", outputs=(_gauge("gpu.clock_mem", "MHz"),)),
    _query("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", outputs=(_gauge("gpu.pcie_link_gen", "generation"),)),
    _query("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", outputs=(_gauge("gpu.pcie_link_width", "lanes"),)),
    _query("throttle", "nvmlDeviceGetCurrentClocksThrottleReasons",
           outputs=(_gauge("gpu.throttle_reasons", "bitmask"),
                    *(_gauge(metric, "flag", partial(_has_bit, bit)) for metric, bit in THROTTLE_FLAGS))),
    # Answered by NvmlCollector._nvlink_totals over the links found enabled at start: (TX KiB, RX KiB).
    _query("nvlink", "nvmlDeviceGetFieldValues",
           outputs=(Output("gpu.nvlink_tx_bytes", "counter", "bytes", operator.itemgetter(0), KIB),
                    Output("gpu.nvlink_rx_bytes", "counter", "bytes", operator.itemgetter(1), KIB))),
)


def _ecc(error_type: str, counter_type: str, metric: str) -> Query:
    """One total of ECC errors of one type (corrected or not) and lifetime (volatile or aggregate)."""
    return _query(metric, "nvmlDeviceGetTotalEccErrors", error_type, counter_type,
                  outputs=(Output(metric, "event", "errors"),))


def _retired(cause: str, metric: str) -> Query:
    """The number of pages retired for one cause (NVML lists their addresses)."""
    return _query(metric, "nvmlDeviceGetRetiredPages", cause, outputs=(Output(metric, "event", "pages", len),))


SLOW_QUERIES = (
    # The energy total costs ~3 ms of CPU per call on an H100 (driver 580), a thousand times any other fast query;
    # the fast table's power gauge follows the draw at the fast pace.
    _query("energy", "nvmlDeviceGetTotalEnergyConsumption",
           outputs=(Output("gpu.energy", "counter", "J", scale=1e-3),)),
    _query("pcie_tx", "nvmlDeviceGetPcieThroughput", "NVML_PCIE_UTIL_TX_BYTES",
           outputs=(_gauge("gpu.pcie_tx_throughput", "bytes/s", scale=KIB),)),
    _query("pcie_rx", "nvmlDeviceGetPcieThroughput", "NVML_PCIE_UTIL_RX_BYTES",
           outputs=(_gauge("gpu.pcie_rx_throughput", "bytes/s", scale=KIB),)),
    _query("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration",
           outputs=(Output("gpu.pcie_link_gen_max", "static", "generation"),)),
    _query("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth",
           outputs=(Output("gpu.pcie_link_width_max", "static", "lanes"),)),
    _ecc("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC", "gpu.ecc_corrected_volatile"),
    _ecc("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC", "gpu.ecc_uncorrected_volatile"),
    _ecc("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC", "gpu.ecc_corrected_aggregate"),
    _ecc("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC", "gpu.ecc_uncorrected_aggregate"),
    # Pre-Ampere GPUs retire pages; A100 and H100 remap rows instead and answer NOT_SUPPORTED here.
    _retired("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", "gpu.retired_pages_sbe"),
    _retired("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", "gpu.retired_pages_dbe"),
    _query("remapped_rows", "nvmlDeviceGetRemappedRows",
           outputs=(Output("gpu.remapped_rows_corrected", "event", "rows", operator.itemgetter(0)),
                    Output("gpu.remapped_rows_uncorrected", "event", "rows", operator.itemgetter(1)),
                    _gauge("gpu.remapped_rows_pending", "flag", operator.itemgetter(2)),
                    _gauge("gpu.remapped_rows_failure", "flag", operator.itemgetter(3)))),
    _query("processes", "nvmlDeviceGetComputeRunningProcesses",
           outputs=(_gauge("gpu.processes", "processes", len),
                    _gauge("gpu.process_memory_used", "bytes", _process_memory))),
)
