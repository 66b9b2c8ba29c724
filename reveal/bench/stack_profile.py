"""Sampling profiles of a running process with py-spy, summarised as where its time goes: by function (own time and
time including callees) and by package. Used by `reveal bench pipeline --profile` on a worker."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field

_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^():]+)(?::\d+)?\)$")
_SITE = re.compile(r"(?:site|dist)-packages/(?P<package>[^/]+)")
_STANDARD = re.compile(r"/lib/python3\.\d+/(?P<module>[^/]+)")


@dataclass
class ProfileSummary:
    """Samples of a process's running threads, by function and by package."""

    samples: int = 0
    own: Counter = field(default_factory=Counter)
    inclusive: Counter = field(default_factory=Counter)
    packages: Counter = field(default_factory=Counter)

    def share(self, counts: Counter, top: int) -> list[tuple[str, float]]:
        """The `top` entries of `counts` as shares of all samples."""
        return [(name, count / max(self.samples, 1)) for name, count in counts.most_common(top)]


def start_py_spy(pid: int, seconds: float, output: str, rate: int = 50) -> subprocess.Popen:
    """py-spy recording collapsed stacks of `pid` for `seconds` (it needs ptrace rights: root or CAP_SYS_PTRACE)."""
    executable = shutil.which("py-spy")
    if executable is None:
        raise RuntimeError("py-spy is not installed (pip install py-spy)")
    return subprocess.Popen([executable, "record", "--pid", str(pid), "--duration", str(max(1, round(seconds))),
                             "--rate", str(rate), "--format", "raw", "--output", output, "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def frame_name(frame: str) -> str:
    """'flush (sinks/clickhouse.py:131)' → 'flush (sinks/clickhouse.py)': one name per function, not per line.

    >>> frame_name("flush (/work/sinks/clickhouse.py:131)")
    'flush (/work/sinks/clickhouse.py)'
    """
    match = _FRAME.match(frame)
    return f"{match['function']} ({match['file']})" if match else frame


def package_of(frame: str) -> str:
    """The package or standard library module a frame's file belongs to, or its folder in Reveal. py-spy names files
    relative to the sys.path entry they were found under, or absolute when they were not on it.

    >>> package_of("insert (/usr/lib/python3.11/site-packages/clickhouse_connect/driver/client.py:5)")
    'clickhouse_connect'
    >>> package_of("svd (numpy/linalg/_linalg.py:1810)")
    'numpy'
    >>> package_of("push (stream_jobs/engine/windows.py:60)")
    'stream_jobs/engine'
    >>> package_of("_run_once (asyncio/base_events.py:1922)")
    'asyncio'
    >>> package_of("iterencode (/usr/lib/python3.11/json/encoder.py:200)")
    'json'
    """
    match = _FRAME.match(frame)
    path = match["file"] if match else frame
    site = _SITE.search(path)
    if site:
        return site["package"].removesuffix(".py")
    standard = _STANDARD.search(path)
    if standard:
        return standard["module"].removesuffix(".py")
    parts = path.lstrip("/").split("/")
    for index, part in enumerate(parts[:-1]):
        if part in ("stream_jobs", "producers", "schemas", "sinks"):
            rest = parts[index + 1:]
            return part if len(rest) == 1 else f"{part}/{rest[0]}"
    if path.startswith("<"):
        return "python"
    return parts[0].removesuffix(".py") if not path.startswith("/") else "python"


def summarise_collapsed(lines) -> ProfileSummary:
    """A summary of py-spy's raw output: one 'frame;frame;…;frame COUNT' line per distinct stack, callers first."""
    summary = ProfileSummary()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if _FRAME.match(f)]
        if not frames:
            continue
        samples = int(count)
        summary.samples += samples
        summary.own[frame_name(frames[-1])] += samples
        summary.packages[package_of(frames[-1])] += samples
        for name in {frame_name(f) for f in frames}:
            summary.inclusive[name] += samples
    return summary
