"""Pressure stall information (PSI) from /proc/pressure/{cpu,memory,io}: the time tasks waited on a resource, a
counter whose rate is the share of time they waited."""

from __future__ import annotations

from pathlib import Path

from producers.collectors.base import Collector, Field, ProcTextCollector, Reading

_SUBSYSTEM = {"cpu": "cpu", "memory": "memory", "io": "storage"}


class PressureFileCollector(ProcTextCollector):
    """One PSI file: 'some avg10=0.00 avg60=0.00 avg300=0.00 total=123' and, except for cpu before 5.13, 'full …'."""

    label_tokens = (0,)

    def __init__(self, resource: str, procfs="/proc", sysfs="/sys"):
        self.resource = resource
        self.source = f"/proc/pressure/{resource}"
        super().__init__(procfs, sysfs)

    def _path(self) -> Path:
        return self.procfs / "pressure" / self.resource

    def line_fields(self, number, tokens):
        scope = tokens[0].decode()
        if scope not in ("some", "full") or len(tokens) != 5:
            raise ValueError("expected 'some|full avg10=… avg60=… avg300=… total=…'")
        # only the total: avg10, avg60 and avg300 are the kernel's moving averages of its rate, which would hold a
        # finding open for tens of seconds after the stall itself has ended
        return [Field(number, 4, f"psi.{self.resource}_{scope}_total_us", "", _SUBSYSTEM[self.resource], "counter",
                      "us")]

    def read(self) -> Reading:
        """PSI values are 'key=value' tokens: strip the keys before the positional parse."""
        data = self._file.read().replace(b"avg10=", b"").replace(b"avg60=", b"").replace(b"avg300=", b"") \
            .replace(b"total=", b"")
        tokens = data.split()
        layout = self._layout
        if layout is None or not layout.matches(tokens):
            layout = self._layout = self._build_layout(data)
        return Reading(layout.names, layout.values(tokens))


class PressureCollector(Collector):
    """CPU, memory and I/O pressure together (kernels since 4.20 with CONFIG_PSI)."""

    default_interval_s = 1.0

    source = "/proc/pressure"

    def __init__(self, procfs="/proc", sysfs="/sys"):
        super().__init__(procfs, sysfs)
        self.resources = [PressureFileCollector(r, procfs, sysfs) for r in ("cpu", "memory", "io")]
        self._joined: tuple[tuple[str, ...], ...] = ()

    def read(self) -> Reading:
        readings = [f.read() for f in self.resources]
        parts = tuple(r.names for r in readings)
        if parts != self._joined:
            self._joined, self._names = parts, tuple(n for r in readings for n in r.names)
        return Reading(self._names, [v for r in readings for v in r.values])

    def collect(self) -> dict[str, float]:
        reading = self.read()
        return dict(zip(reading.names, reading.values))

    def describe(self, name: str):
        return next(f.describe(name) for f in self.resources if name in f._channels)

    def files(self):
        return tuple(path for f in self.resources for path in f.files())

    def close(self) -> None:
        for f in self.resources:
            f.close()
