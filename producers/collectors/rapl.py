"""Energy counters of the RAPL power domains (package, core, uncore, dram, psys) from powercap in sysfs."""

from __future__ import annotations

import os
import re
from pathlib import Path

from producers.collectors.base import SysfsFilesCollector
from producers.collectors.sysfs_names import qualified_where_repeated, read_label, sanitised
from schemas.agent_records import Channel

POWERCAP = "class/powercap"
# intel-rapl:<package> and intel-rapl:<package>:<subzone>; the intel-rapl control type itself and the MMIO
# interface (intel-rapl-mmio:N, a second view of the package domain) do not match.
_ZONE = re.compile(r"^intel-rapl:(\d+)(?::(\d+))?$")


class RaplCollector(SysfsFilesCollector):
    """cpu.energy_uj.<domain> (counter, µJ) and cpu.energy_range_uj.<domain> (static) for every RAPL zone.

    energy_uj wraps to zero at max_energy_range_uj, which is not a power of two (262143328850 µJ on many servers),
    so rates must use that range for wrap-around, not 2^32. Domains are named after each zone's `name` file;
    subzones (core, uncore, dram) get their package's number appended: core-0, dram-1. DRAM energy belongs to the
    memory subsystem. Since Linux 5.10 (CVE-2020-8694) energy_uj is readable by root only.
    """

    source = "/sys/class/powercap/intel-rapl:*"
    default_interval_s = 0.1

    def discover(self):
        zones = rapl_zones(self.sysfs / POWERCAP)
        for zone, domain in zones:
            _check_readable(zone / "energy_uj")
            subsystem = "memory" if domain.startswith("dram") else "cpu"
            yield (Channel(f"cpu.energy_uj.{domain}", subsystem, "counter", "uJ", domain), zone / "energy_uj", 1.0)
            yield (Channel(f"cpu.energy_range_uj.{domain}", subsystem, "static", "uJ", domain),
                   zone / "max_energy_range_uj", 1.0)


def rapl_zones(powercap: Path) -> list[tuple[Path, str]]:
    """(zone directory, unique domain name) for every package zone and subzone, packages first in number order."""
    if not powercap.is_dir():
        return []
    found = sorted((_zone_key(path.name), path) for path in powercap.iterdir() if _ZONE.match(path.name))
    names = {key: sanitised_domain(read_label(path / "name") or path.name) for key, path in found}
    domains = [names[key] if len(key) == 1 else f"{names[key]}-{_package_suffix(names.get(key[:1], ''), key)}"
               for key, _ in found]
    zone_numbers = ["-".join(map(str, key)) for key, _ in found]
    return list(zip((path for _, path in found), qualified_where_repeated(domains, zone_numbers, "-")))


def sanitised_domain(name: str) -> str:
    """A zone name fit for a channel name, keeping the kernel's hyphens: package-0, core, dram, psys."""
    return "-".join(sanitised(part) for part in name.split("-")) or "zone"


def _zone_key(name: str) -> tuple[int, ...]:
    """(package,) or (package, subzone) from a zone directory name."""
    return tuple(int(number) for number in _ZONE.match(name).groups() if number is not None)


def _package_suffix(package_name: str, key: tuple[int, ...]) -> str:
    """The package part of a subzone's name: 0 for package-0, 0-die-1 for package-0-die-1."""
    return package_name.removeprefix("package-") if package_name.startswith("package-") else str(key[0])


def _check_readable(path: Path) -> None:
    """PermissionError with a hint when energy_uj exists but is for root only."""
    if path.exists() and not os.access(path, os.R_OK):
        raise PermissionError(f"{path} is readable by root only (Linux >= 5.10); run the agent as root")
