"""Names for sysfs channels: numbered directories (cpu12, node1, hwmon3) and free-form labels ("Package id 0")."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Iterable

_NOT_ALLOWED = re.compile(r"[^a-z0-9_]+")


def sanitised(label: str) -> str:
    """Lower case, with every run of characters outside [a-z0-9_] turned into one underscore.

    >>> sanitised("Package id 0"), sanitised("haltpoll idle"), sanitised("C1E")
    ('package_id_0', 'haltpoll_idle', 'c1e')
    """
    return _NOT_ALLOWED.sub("_", label.strip().lower()).strip("_")


def qualified_where_repeated(names: list[str], qualifiers: Iterable[str], separator: str = "_") -> list[str]:
    """The names, each one that occurs more than once with its qualifier appended; always unique.

    >>> qualified_where_repeated(["core_0", "core_0", "package_id_0"], ["hwmon0", "hwmon1", "hwmon0"])
    ['core_0_hwmon0', 'core_0_hwmon1', 'package_id_0']
    """
    counts = Counter(names)
    qualified = [f"{name}{separator}{qualifier}" if counts[name] > 1 else name
                 for name, qualifier in zip(names, qualifiers)]
    unique, taken = [], set()
    for name in qualified:  # a qualified name can still meet another name that happened to look like it
        candidate, ordinal = name, 2
        while candidate in taken:
            candidate, ordinal = f"{name}{separator}{ordinal}", ordinal + 1
        taken.add(candidate)
        unique.append(candidate)
    return unique


def read_label(path) -> str | None:
    """The first line of a label file, or None when it is missing, unreadable or empty."""
    try:
        with open(path, "rb") as handle:
            lines = handle.read(256).decode(errors="replace").strip().splitlines()
    except OSError:
        return None
    return lines[0].strip() if lines else None


def numbered(path_name: str, prefix: str) -> int:
    """The number after `prefix` in a directory name such as cpu12 or node1; -1 when there is none."""
    suffix = path_name[len(prefix):]
    return int(suffix) if path_name.startswith(prefix) and suffix.isascii() and suffix.isdigit() else -1


def numbered_directories(parent: Path, prefix: str) -> list[Path]:
    """The prefixN entries of a directory (cpu0 … cpu95, not cpufreq), in number order; none when it is absent."""
    if not parent.is_dir():
        return []
    return sorted((path for path in parent.iterdir() if numbered(path.name, prefix) >= 0),
                  key=lambda path: numbered(path.name, prefix))
