"""Every field of /proc/meminfo, in bytes (kB fields) or pages (HugePages counts)."""

from __future__ import annotations

from producers.collectors.base import Collector

# Fields that describe the machine rather than its state: left out of single-host scoring, kept for cross-host.
STATIC_FIELDS = frozenset({"MemTotal", "SwapTotal", "Hugepagesize", "HugePages_Total", "Hugetlb", "CmaTotal",
                           "DirectMap4k", "DirectMap2M", "DirectMap1G", "VmallocTotal"})


class MemInfoCollector(Collector):
    """Memory usage gauges; fields come and go between kernel versions, so whatever is present is reported."""

    source = "/proc/meminfo"

    def collect(self) -> dict[str, float]:
        return self._parse_lines("meminfo", self._parse_line)

    def _parse_line(self, out: dict[str, float], line: str) -> None:
        key, _, rest = line.partition(":")
        fields = rest.split()
        if not key or not fields:
            raise ValueError("expected 'Name: value [kB]'")
        value = float(fields[0])
        unit = "pages"
        if len(fields) > 1 and fields[1] == "kB":
            value, unit = value * 1024.0, "bytes"
        kind = "static" if key in STATIC_FIELDS else "gauge"
        self._put(out, f"mem.{key}", "", value, "memory", kind, unit)
