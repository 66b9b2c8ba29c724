"""Per-block-device I/O counters from /proc/diskstats."""

from __future__ import annotations

import re

from producers.collectors.base import Field, ProcTextCollector

# The first eleven statistics exist since Linux 2.6; discard (4.18) and flush (5.5) fields follow when present.
FIELDS = ("reads_completed", "reads_merged", "sectors_read", "time_reading_ms", "writes_completed",
          "writes_merged", "sectors_written", "time_writing_ms", "ios_in_progress", "time_io_ms",
          "weighted_time_io_ms", "discards_completed", "discards_merged", "sectors_discarded", "time_discarding_ms",
          "flushes_completed", "time_flushing_ms")
_UNITS = {"sectors": "sectors", "time": "ms", "weighted": "ms"}
# Pseudo devices that carry no hardware signal.
DEFAULT_EXCLUDE = re.compile(r"^(loop|ram|zram|fd|sr)\d*")


class DiskStatsCollector(ProcTextCollector):
    """Cumulative I/O counters per device; ios_in_progress is a gauge (the queue depth)."""

    source = "/proc/diskstats"
    relative = "diskstats"
    label_tokens = (2,)

    def __init__(self, procfs="/proc", sysfs="/sys", exclude: re.Pattern = DEFAULT_EXCLUDE):
        super().__init__(procfs, sysfs)
        self.exclude = exclude

    def line_fields(self, number, tokens):
        if len(tokens) < 14:
            raise ValueError(f"expected at least 14 fields, found {len(tokens)}")
        device = tokens[2].decode()
        if self.exclude.match(device):
            return ()
        return [Field(number, 3 + i, f"disk.{field}", device, "storage",
                      "gauge" if field == "ios_in_progress" else "counter", _UNITS.get(field.split("_")[0], "ios"))
                for i, field in enumerate(FIELDS[:len(tokens) - 3])]
