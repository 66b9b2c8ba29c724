"""Every field of /proc/meminfo, in bytes (kB fields) or pages (HugePages counts)."""

from __future__ import annotations

from producers.collectors.base import Field, ProcTextCollector

# Fields that describe the machine rather than its state: left out of single-host scoring, kept for cross-host.
STATIC_FIELDS = frozenset({"MemTotal", "SwapTotal", "Hugepagesize", "HugePages_Total", "Hugetlb", "CmaTotal",
                           "DirectMap4k", "DirectMap2M", "DirectMap1G", "VmallocTotal"})


def meminfo_fields(number: int, tokens: list[bytes], prefix: str, skip: int, device: str = "") -> list[Field]:
    """One 'Name: value [kB]' line (after `skip` leading tokens) as a memory channel."""
    key = tokens[skip].rstrip(b":").decode()
    if not tokens[skip].endswith(b":") or not key:
        raise ValueError("expected 'Name: value [kB]'")
    in_kb = len(tokens) > skip + 2 and tokens[skip + 2] == b"kB"
    kind = "static" if key in STATIC_FIELDS else "gauge"
    return [Field(number, skip + 1, f"{prefix}.{key}", device, "memory", kind, "bytes" if in_kb else "pages",
                  1024.0 if in_kb else 1.0)]


class MemInfoCollector(ProcTextCollector):
    """Memory usage gauges; fields come and go between kernel versions, so whatever is present is reported."""

    source = "/proc/meminfo"
    relative = "meminfo"

    def line_fields(self, number, tokens):
        return meminfo_fields(number, tokens, "mem", 0)
