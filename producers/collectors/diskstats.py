"""Per-block-device I/O counters from /proc/diskstats."""

from __future__ import annotations

import re

from producers.collectors.base import Collector

# The first eleven statistics exist since Linux 2.6; discard (4.18) and flush (5.5) fields follow when present.
FIELDS = ("reads_completed", "reads_merged", "sectors_read", "time_reading_ms", "writes_completed",
          "writes_merged", "sectors_written", "time_writing_ms", "ios_in_progress", "time_io_ms",
          "weighted_time_io_ms", "discards_completed", "discards_merged", "sectors_discarded", "time_discarding_ms",
          "flushes_completed", "time_flushing_ms")
_UNITS = {"sectors": "sectors", "time": "ms", "weighted": "ms"}
# Pseudo devices that carry no hardware signal.
DEFAULT_EXCLUDE = re.compile(r"^(loop|ram|zram|fd|sr)\d*")


class DiskStatsCollector(Collector):
    """Cumulative I/O counters per device; ios_in_progress is a gauge (the queue depth)."""

    source = "/proc/diskstats"

    def __init__(self, procfs="/proc", sysfs="/sys", exclude: re.Pattern = DEFAULT_EXCLUDE):
        super().__init__(procfs, sysfs)
        self.exclude = exclude

    def collect(self) -> dict[str, float]:
        return self._parse_lines("diskstats", self._parse_line)

    def _parse_line(self, out: dict[str, float], line: str) -> None:
        fields = line.split()
        if len(fields) < 14:
            raise ValueError(f"expected at least 14 fields, found {len(fields)}")
        device = fields[2]
        if self.exclude.match(device):
            return
        for field, value in zip(FIELDS, fields[3:]):
            kind = "gauge" if field == "ios_in_progress" else "counter"
            unit = _UNITS.get(field.split("_")[0], "ios")
            self._put(out, f"disk.{field}", device, float(value), "storage", kind, unit)
