"""Faults that hit a host's share of the machine, through its cgroup: processes competing for its CPU, a CPU quota,
memory held or capped under a streaming reader, and a writer that fsyncs. Each measures what it did from the
host's own cgroup counters or its processes' /proc entries."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from reveal.lab.faults import Fault, FaultEffect
from reveal.lab.hosts import LabHost

CLOCK_TICKS_PER_S = 100


def process_cpu_s(process: subprocess.Popen) -> float:
    """User plus system CPU seconds a running process has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S


class CpuContention(Fault):
    """Magnitude busy processes in the host's cgroup, competing with its workload for CPU."""

    unit = "busy processes"

    def _begin(self) -> None:
        for _ in range(max(1, round(self.spec.magnitude))):
            self._spawn_python("while True: pass")

    def _counters_at_stop(self) -> dict[str, float]:
        return {"cpu_s": sum(process_cpu_s(process) for process in self._processes)}

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        return FaultEffect(after["cpu_s"] >= 0.25 * seconds, {"cpu_seconds_taken": after["cpu_s"],
                                                             "cores_taken": after["cpu_s"] / seconds})


class Straggler(Fault):
    """Throttles the whole host to magnitude of one core (cgroup CPU quota), so the job waits for it."""

    unit = "of a core"
    PERIOD_US = 100_000

    def _begin(self) -> None:
        quota = max(1000, round(self.spec.magnitude * self.PERIOD_US))
        self.host.cgroup.write("cpu.max", f"{quota} {self.PERIOD_US}", "cpu.cfs_quota_us", str(quota))

    def _counters(self) -> dict[str, float]:
        stat = dict(line.split() for line in self.host.cgroup.read("cpu.stat", "cpu.stat").splitlines())
        throttled_s = float(stat.get("throttled_usec", 0)) / 1e6 or float(stat.get("throttled_time", 0)) / 1e9
        return {"nr_throttled": float(stat.get("nr_throttled", 0)), "throttled_s": throttled_s}

    def _end(self) -> None:
        self.host.cgroup.write("cpu.max", f"max {self.PERIOD_US}", "cpu.cfs_quota_us", "-1")

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        growth = self._growth(after)
        return FaultEffect(growth["nr_throttled"] > 0, {"periods_throttled": growth["nr_throttled"],
                                                        "seconds_throttled": growth["throttled_s"]})


class MemoryReservation(Fault):
    """Allocates, touches and holds magnitude MiB on this host alone (the HugePages-reserved-on-one-host case)."""

    subsystem, unit = "memory", "MiB"

    def _begin(self) -> None:
        self._holder = self._spawn_python(f"import time, numpy; block = numpy.ones({int(self.spec.magnitude)} << 17); "
                                          "time.sleep(1e6)")

    def _counters_at_stop(self) -> dict[str, float]:
        try:
            status = Path(f"/proc/{self._holder.pid}/status").read_text()
        except OSError:
            return {"rss_mib": 0.0}
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        return {"rss_mib": int(found.group(1)) / 1024 if found else 0.0}

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        return FaultEffect(after["rss_mib"] >= 0.8 * self.spec.magnitude, {"resident_mib": after["rss_mib"]})


class MemoryPressure(Fault):
    """Caps the host's memory just above its use (memory.high, or v1's limit) while a reader streams magnitude MiB
    of file pages through it, so the kernel reclaims and faults pages in all along."""

    subsystem, unit = "memory", "MiB"

    def _begin(self) -> None:
        used = int(self.host.cgroup.read("memory.current", "memory.usage_in_bytes"))
        self._limit = used + (32 << 20)
        self.host.cgroup.write("memory.high", str(self._limit), "memory.limit_in_bytes", str(self._limit))
        data = self.work_dir / f"pressure-{self.spec.host}.bin"
        size = int(self.spec.magnitude) << 20
        self._spawn_python(
            f"import os, time\npath = {str(data)!r}\n"
            f"with open(path, 'wb') as f: f.truncate({size})\n"
            "while True:\n"
            "    with open(path, 'rb') as f:\n"
            "        while f.read(1 << 20): pass\n"
            "    time.sleep(0.05)\n")

    def _counters(self) -> dict[str, float]:
        if self.host.cgroup.unified:
            events = dict(line.split() for line in self.host.cgroup.read("memory.events", "").splitlines())
            return {"limit_hits": float(events.get("high", 0))}
        return {"limit_hits": float(self.host.cgroup.read("", "memory.failcnt"))}

    def _end(self) -> None:
        self.host.cgroup.write("memory.high", "max", "memory.limit_in_bytes", "-1")

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        hits = self._growth(after)["limit_hits"]
        return FaultEffect(hits > 0, {"memory_limit_hits": hits})


class StorageBurst(Fault):
    """Writes magnitude MiB/s in 1 MiB chunks with an fsync after each, from inside the host's cgroup; the bytes
    that reached the disk are read from the host's own I/O counters."""

    subsystem, unit = "storage", "MiB/s"

    def _begin(self) -> None:
        path = self.work_dir / f"burst-{self.spec.host}.bin"
        self._spawn_python(
            "import os, time\n"
            f"fd = os.open({str(path)!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
            "chunk, written = os.urandom(1 << 20), 0\n"
            f"rate, started = {float(self.spec.magnitude)}, time.monotonic()\n"
            "while True:\n"
            "    os.pwrite(fd, chunk, (written % 64) << 20); os.fsync(fd); written += 1\n"
            "    ahead = written / rate - (time.monotonic() - started)\n"
            "    if ahead > 0: time.sleep(ahead)\n")

    def _counters(self) -> dict[str, float]:
        return {"written_bytes": host_written_bytes(self.host)}

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        written = self._growth(after)["written_bytes"]
        asked = self.spec.magnitude * seconds * (1 << 20)
        return FaultEffect(written >= 0.5 * asked, {"bytes_written": written, "bytes_asked": asked})


def host_written_bytes(host: LabHost) -> float:
    """Bytes the host's cgroup has written to block devices (v2 io.stat wbytes, v1 blkio Write), summed."""
    if host.cgroup.unified:
        text = host.cgroup.read("io.stat", "")
        return float(sum(int(value) for value in re.findall(r"wbytes=(\d+)", text)))
    text = host.cgroup.read("", "blkio.throttle.io_service_bytes")
    return float(sum(int(value) for value in re.findall(r"^\S+ Write (\d+)$", text, flags=re.MULTILINE)))
