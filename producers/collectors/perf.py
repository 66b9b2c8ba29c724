"""Per-CPU PMU counters (cycles, instructions, cache and stall events) through perf_event_open(2), via ctypes.

Every event is opened once per online CPU (pid=-1, counting whatever runs there) and kept open; each read is one
read(2) per counter of (value, time_enabled, time_running), and the value is scaled by enabled / running because
the kernel multiplexes more events than the PMU has counters. Channels are cumulative counters
`pmu.<event>.cpuN`; rates are computed downstream like every other counter.

Which events: the generic hardware events most PMU drivers map (cycles, instructions, cache references and misses,
branch misses, front- and back-end stalls, last-level-cache load misses), plus a thin per-vendor table of raw events
from the paper's Appendix A chosen by the vendor in /proc/cpuinfo. An event the kernel refuses on the first online
CPU is dropped on every CPU and named once in one log line; when no event opens, the source is unavailable and
`read()` raises OSError saying why. The raw encodings are those of Intel Skylake and later and of AMD Zen; the
kernel accepts a raw config on any model, so on another generation the same number may count a different event.

Verified on the development VM (Linux 6.18, x86-64 AMD guest without a virtual PMU, perf_event_paranoid 2, root):
the real syscall path (struct layout, syscall number 298, read format, fd lifetime) with the software events
cpu-clock, context-switches, cpu-migrations, page-faults and major-faults; there every hardware, cache and raw
event was refused with ENOENT, which the software fallback and the unavailability message were checked against;
run as uid 65534 without capabilities, every event was refused with EACCES and the message named paranoid level 2.
Verified only through a fake opener: the hardware, cache and raw vendor events, their encodings, and the scaling of
multiplexed counters (a VM without a PMU never multiplexes). The aarch64 syscall number is untested.
The event tables are in perf_events.py, the syscall in perf_syscall.py.
"""

from __future__ import annotations

import errno
import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from producers.collectors.base import Collector, Reading
from producers.collectors.perf_events import SOFTWARE_EVENTS, PerfEvent, default_events
from producers.collectors.perf_syscall import Opener, PerfEventOpener

log = logging.getLogger(__name__)

_REASONS = {
    errno.ENOENT: "the kernel has no PMU event for them, as in a VM without a virtual PMU",
    errno.ENODEV: "the kernel has no PMU for this CPU",
    errno.EOPNOTSUPP: "the PMU cannot count them in per-CPU mode",
    errno.EINVAL: "the kernel rejected the event attributes",
    errno.ENOSYS: "this kernel has no perf events (CONFIG_PERF_EVENTS) or no syscall number is known for it",
    errno.EPERM: "a seccomp profile or lockdown forbids perf_event_open; run with CAP_PERFMON outside it",
}


def parse_cpu_list(text: str) -> list[int]:
    """The CPUs of a kernel CPU list such as '0-3,8,10-11', in ascending order.

    >>> parse_cpu_list("0-3,8,10-11\\n")
    [0, 1, 2, 3, 8, 10, 11]
    """
    cpus: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


@dataclass(frozen=True)
class OpenedCounter:
    """One open event on one CPU."""

    name: str
    fd: int


class PerfCollector(Collector):
    """Cumulative PMU event counts per CPU, scaled for multiplexing; events the kernel refuses are left out.

    `software_fallback` (off by default) counts the kernel's software events when no hardware event opens, so a
    VM without a virtual PMU still reports `pmu.sw_*` channels. It is off because those channels restate
    /proc/stat and /proc/vmstat (CPU time, context switches, faults) rather than the PMU signals the detectors
    use, and because a host without a PMU should lack the `pmu.*` source and say so, not look as if it had one.
    """

    source = "perf_event_open"
    default_interval_s = 0.1

    def __init__(self, procfs: str | Path = "/proc", sysfs: str | Path = "/sys", opener: Opener | None = None,
                 events: Iterable[PerfEvent] | None = None, software_fallback: bool = False):
        super().__init__(procfs, sysfs)
        self._opener = opener if opener is not None else PerfEventOpener()
        self._requested = tuple(events) if events is not None else None
        self._software_fallback = software_fallback
        self._counters: list[OpenedCounter] | None = None
        self._names_tuple: tuple[str, ...] = ()
        self._unavailable: tuple[int, str] | None = None  # (errno, why), decided at the first read

    def read(self) -> Reading:
        if self._counters is None:
            self._open_counters()
        if self._unavailable is not None:
            raise OSError(*self._unavailable)
        values = np.fromiter(map(self._scaled, self._counters), dtype=np.float64, count=len(self._counters))
        return Reading(self._names_tuple, values)

    def collect(self) -> dict[str, float]:
        reading = self.read()
        return dict(zip(reading.names, reading.values.tolist()))

    def close(self) -> None:
        for counter in self._counters or ():
            self._opener.close(counter.fd)
        self._counters = None

    def _scaled(self, counter: OpenedCounter) -> float:
        """value × enabled / running: the estimate for a multiplexed counter; 0 if it never ran, NaN if unreadable."""
        try:
            value, enabled, running = self._opener.read(counter.fd)
        except OSError as error:  # one unreadable counter costs one channel
            self._warn_once(counter.name, "%s: cannot read %s (%s); the channel reads NaN", self.source,
                            counter.name, error)
            return float("nan")
        return value * enabled / running if running else 0.0

    def _open_counters(self) -> None:
        """Open every event on every online CPU, once; record why the source is unavailable if none opens."""
        cpus = parse_cpu_list((self.sysfs / "devices/system/cpu/online").read_text())
        if not cpus:
            raise OSError(errno.ENODEV, f"no online CPU listed in {self.sysfs / 'devices/system/cpu/online'}")
        counters, refused = self._open_events(self._events(), cpus)
        if counters:
            self._log_left_out(refused, cpus[0])
        elif self._software_fallback:
            counters = self._open_software_fallback(refused, cpus)
        else:
            self._unavailable = (_most_common(refused) or errno.ENOENT,
                                 f"perf_event_open refused every PMU event ({self._reason(refused)})")
        self._counters = counters
        self._names_tuple = tuple(counter.name for counter in counters)

    def _open_software_fallback(self, refused: dict[str, int], cpus: list[int]) -> list[OpenedCounter]:
        """The software events on every CPU, when no PMU event opened; the source is unavailable if none does."""
        counters, refused_software = self._open_events(SOFTWARE_EVENTS, cpus)
        if counters:
            log.warning("%s: every PMU event was refused (%s); counting software events instead",
                        self.source, self._reason(refused))
            self._log_left_out(refused_software, cpus[0])
        else:
            hardware, software = self._reason(refused), self._reason(refused_software)
            why = (f"every PMU and software event ({hardware})" if hardware == software
                   else f"every PMU event ({hardware}) and every software event ({software})")
            self._unavailable = (_most_common(refused_software) or errno.ENOENT, f"perf_event_open refused {why}")
        return counters

    def _log_left_out(self, refused: dict[str, int], cpu: int) -> None:
        """Name in one log line every event the kernel refused on the first CPU."""
        if refused:
            log.warning("%s: left out events refused by the kernel on cpu%d: %s", self.source, cpu,
                        ", ".join(f"{name} ({_errno_name(code)})" for name, code in refused.items()))

    def _events(self) -> tuple[PerfEvent, ...]:
        return self._requested if self._requested is not None else default_events(self._cpuinfo())

    def _open_events(self, events: Iterable[PerfEvent], cpus: list[int]) -> tuple[list[OpenedCounter], dict]:
        """Counters for the events the first CPU accepts, on every CPU; and event name → errno of those refused."""
        refused: dict[str, int] = {}
        accepted: list[PerfEvent] = []
        counters: list[OpenedCounter] = []
        for event in events:
            try:
                counters.append(self._counter(event, cpus[0]))
                accepted.append(event)
            except OSError as error:
                refused[event.name] = error.errno
        for cpu in cpus[1:]:
            counters += self._counters_on(accepted, cpu)
        return counters, refused

    def _counters_on(self, events: list[PerfEvent], cpu: int) -> list[OpenedCounter]:
        """The events the first CPU accepted, opened on another CPU; one refused there costs that channel alone."""
        counters = []
        for event in events:
            try:
                counters.append(self._counter(event, cpu))
            except OSError as error:  # e.g. a hybrid CPU whose small cores lack the event, or EMFILE
                self._warn_once(f"{event.name}:cpu{cpu}", "%s: %s refused on cpu%d (%s); channel left out",
                                self.source, event.name, cpu, _errno_name(error.errno))
        return counters

    def _counter(self, event: PerfEvent, cpu: int) -> OpenedCounter:
        fd = self._opener.open(event, cpu)
        return OpenedCounter(self._register(event.metric, f"cpu{cpu}", "cpu", "counter", event.unit), fd)

    def _reason(self, refused: dict[str, int]) -> str:
        """'ERRNAME: what it means here' for the errno most events were refused with."""
        code = _most_common(refused)
        if code is None:
            return "no events were requested"
        if code == errno.EACCES:
            return f"EACCES: perf_event_paranoid is {self._paranoid()}; run as root or grant CAP_PERFMON"
        return f"{_errno_name(code)}: {_REASONS.get(code, os.strerror(code))}"

    def _paranoid(self) -> str:
        try:
            return (self.procfs / "sys/kernel/perf_event_paranoid").read_text().strip()
        except OSError:
            return "unknown"

    def _cpuinfo(self) -> str:
        try:
            return (self.procfs / "cpuinfo").read_text()
        except OSError:  # without cpuinfo the vendor is unknown: the generic events still apply
            return ""


def _most_common(refused: dict[str, int]) -> int | None:
    counts = Counter(refused.values()).most_common(1)
    return counts[0][0] if counts else None


def _errno_name(code: int) -> str:
    """The errno's symbol; ENOTSUP and EOPNOTSUPP share a number on Linux, whose perf code returns the latter."""
    return "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code, str(code))
