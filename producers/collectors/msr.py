"""APERF and MPERF of every CPU through the msr driver, and the TSC clock they are measured against.

Busy MHz (turbostat's Bzy_MHz) is derived downstream from two samples: tsc_mhz × Δaperf / Δmperf. Both MSRs count
only while the CPU is in C0: MPERF at the TSC rate, APERF at the actual clock. They are 64-bit and held here as
float64, exact up to 2^53 cycles (about a month at 3 GHz) and within a few thousand cycles after that, which is far
below one interval's delta.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from producers.collectors.base import Collector, Reading
from producers.collectors.sysfs_names import numbered
from schemas.agent_records import Channel

IA32_MPERF = 0xE7
IA32_APERF = 0xE8
HINT = "modprobe msr and run as root"
_NOMINAL_GHZ = re.compile(rb"^model name\s*:.*@\s*([0-9.]+)\s*GHz", re.MULTILINE)
_CPU_MHZ = re.compile(rb"^cpu MHz\s*:\s*([0-9.]+)", re.MULTILINE)


def tsc_mhz(cpuinfo: bytes) -> float:
    """The TSC rate: the nominal clock in the model name when given, else the first 'cpu MHz' line, else NaN.

    'cpu MHz' is the current clock of that CPU, not the TSC, hence the model name first.

    >>> tsc_mhz(b"model name\\t: Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz\\ncpu MHz\\t\\t: 1200.117\\n")
    3000.0
    >>> tsc_mhz(b"model name\\t: AMD EPYC\\ncpu MHz\\t\\t: 2596.122\\n")
    2596.122
    """
    match = _NOMINAL_GHZ.search(cpuinfo)
    if match:
        return float(match.group(1)) * 1000.0
    match = _CPU_MHZ.search(cpuinfo)
    return float(match.group(1)) if match else float("nan")


def read_msr(fd: int, register: int) -> float:
    """One 64-bit MSR through an open msr device file; the file offset is the register number."""
    data = os.pread(fd, 8, register)
    if len(data) != 8:
        raise OSError(f"short read of MSR {register:#x}: {len(data)} bytes")
    return float(int.from_bytes(data, "little"))


class AperfMperfCollector(Collector):
    """cpu.aperf.cpuN and cpu.mperf.cpuN (counters, cycles) and the static cpu.tsc_mhz."""

    source = "/dev/cpu/*/msr"
    default_interval_s = 0.1

    def __init__(self, procfs="/proc", sysfs="/sys", devroot: str | Path = "/dev"):
        super().__init__(procfs, sysfs)
        self.devroot = Path(devroot)
        self._cpus: list[tuple[str, int | None]] | None = None
        self._tsc_mhz = float("nan")
        self._reading_names: tuple[str, ...] = ()

    def read(self) -> Reading:
        if self._cpus is None:
            self._open()
        values = np.empty(1 + 2 * len(self._cpus))
        values[0] = self._tsc_mhz
        for index, (cpu, fd) in enumerate(self._cpus):
            values[1 + 2 * index:3 + 2 * index] = self._counters(cpu, fd)
        return Reading(self._reading_names, values)

    def collect(self) -> dict[str, float]:
        reading = self.read()
        return dict(zip(reading.names, reading.values.tolist()))

    def close(self) -> None:
        for _, fd in self._cpus or ():
            if fd is not None:
                os.close(fd)
        self._cpus = None

    def _open(self) -> None:
        """Open every CPU's msr file; OSError (with the hint) unless at least one CPU yields both counters."""
        files = sorted((path for path in self.devroot.glob("cpu/*/msr") if numbered(path.parent.name, "") >= 0),
                       key=lambda path: numbered(path.parent.name, ""))
        if not files:
            raise FileNotFoundError(f"{self.source}: no msr device files under {self.devroot / 'cpu'}; {HINT}")
        cpus = [(f"cpu{path.parent.name}", _open_or_none(path)) for path in files]
        if not any(fd is not None and _readable(fd) for _, fd in cpus):
            for _, fd in cpus:
                if fd is not None:
                    os.close(fd)
            raise OSError(f"{self.source}: APERF/MPERF cannot be read from {files[0]}; {HINT}")
        self._cpus = cpus
        self._tsc_mhz = tsc_mhz(_read_or_empty(self.procfs / "cpuinfo"))
        self._reading_names = ("cpu.tsc_mhz",) + tuple(
            name for cpu, _ in cpus for name in (f"cpu.aperf.{cpu}", f"cpu.mperf.{cpu}"))
        self._remember(Channel("cpu.tsc_mhz", "cpu", "static", "MHz"))
        for cpu, _ in cpus:
            self._remember(Channel(f"cpu.aperf.{cpu}", "cpu", "counter", "cycles", cpu))
            self._remember(Channel(f"cpu.mperf.{cpu}", "cpu", "counter", "cycles", cpu))

    def _counters(self, cpu: str, fd: int | None) -> tuple[float, float]:
        """(APERF, MPERF) of one CPU; NaN for both when its file cannot be read (an offline CPU reads EIO)."""
        try:
            if fd is None:
                raise FileNotFoundError(f"the msr file of {cpu} could not be opened")
            return read_msr(fd, IA32_APERF), read_msr(fd, IA32_MPERF)
        except OSError as error:
            self._warn_once(cpu, "%s: cannot read APERF/MPERF of %s (%s); its channels read NaN", self.source,
                            cpu, error)
            return float("nan"), float("nan")

    def _remember(self, channel: Channel) -> None:
        """Register a channel's catalog entry."""
        self._channels.setdefault(channel.name, channel)


def _open_or_none(path: Path) -> int | None:
    """A read-only descriptor of the file, or None when it cannot be opened (not root, no msr module)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _readable(fd: int) -> bool:
    """Whether both MSRs can be read; a VM that hides them answers EIO."""
    try:
        read_msr(fd, IA32_APERF)
        read_msr(fd, IA32_MPERF)
    except OSError:
        return False
    return True


def _read_or_empty(path: Path) -> bytes:
    """The whole file, or nothing when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError:
        return b""
