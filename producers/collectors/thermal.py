"""Temperatures from hwmon sensors and ACPI/platform thermal zones (millidegrees Celsius in sysfs)."""

from __future__ import annotations

import re
from pathlib import Path

from producers.collectors.base import SysfsFilesCollector
from producers.collectors.sysfs_names import numbered_directories, qualified_where_repeated, read_label, sanitised
from schemas.agent_records import Channel

_TEMP_INPUT = re.compile(r"^temp(\d+)_input$")


class ThermalCollector(SysfsFilesCollector):
    """cpu.temp_c.<sensor> in °C for every hwmon temperature input and every thermal zone.

    Sensors are named `<hwmon name>_<label>` (coretemp_package_id_0, nvme_composite; tempN without a label) and
    `<zone type>` (x86_pkg_temp, acpitz). A name that occurs twice (the Core 0 of each socket) gets its directory
    appended: coretemp_core_0_hwmon1. The kind is static: thermal sensors are left out of single-host scoring and
    kept for cross-host comparison (paper §4.2). A zone whose driver cannot answer (iwlwifi with its interface down
    returns ENODATA) reads NaN.
    """

    source = "/sys/class/hwmon/hwmon*/temp*_input, /sys/class/thermal/thermal_zone*/temp"
    default_interval_s = 1.0

    def discover(self):
        sensors = hwmon_sensors(self.sysfs / "class/hwmon") + thermal_zones(self.sysfs / "class/thermal")
        names = qualified_where_repeated([name for name, _, _ in sensors], [owner for _, owner, _ in sensors])
        for name, (_, _, path) in zip(names, sensors):
            yield Channel(f"cpu.temp_c.{name}", "cpu", "static", "celsius", name), path, 0.001


def hwmon_sensors(hwmon: Path) -> list[tuple[str, str, Path]]:
    """(sensor name, hwmon directory name, input file) for every temperature input of every hwmon device."""
    sensors = []
    for device in numbered_directories(hwmon, "hwmon"):
        # Older kernels and drivers keep the attributes on the parent device, seen here as device/.
        attributes = device if (device / "name").exists() else device / "device"
        chip = sanitised(read_label(attributes / "name") or "") or device.name
        for number, path in _temperature_inputs(attributes):
            label = sanitised(read_label(attributes / f"temp{number}_label") or "") or f"temp{number}"
            sensors.append((f"{chip}_{label}", device.name, path))
    return sensors


def thermal_zones(thermal: Path) -> list[tuple[str, str, Path]]:
    """(zone type, zone directory name, temp file) for every thermal zone."""
    return [(sanitised(read_label(zone / "type") or "") or zone.name, zone.name, zone / "temp")
            for zone in numbered_directories(thermal, "thermal_zone")]


def _temperature_inputs(attributes: Path) -> list[tuple[int, Path]]:
    """(N, tempN_input) of one hwmon device, in sensor order."""
    if not attributes.is_dir():
        return []
    matches = ((_TEMP_INPUT.match(path.name), path) for path in attributes.iterdir())
    return sorted((int(match.group(1)), path) for match, path in matches if match)

