"""`reveal bench host-faults`: Reveal embedded on this host, judged on faults made by hand and on a long clean stretch.

`reveal run` learns this host's baseline, then three faults are made one after another, each for `fault_s`: a CPU
burner (one busy process per core), a burst of `dd` writes synced to disk, and a 2 GiB allocation touched page by
page. Then the host is left alone for `clean_s`. Afterwards the alerts stored in the run's embedded ClickHouse are
judged as an operator would: a fault is found by an alert that opens between its start and `grace_s` after its end
(delay from its start), with the subsystem it names and its claim; every alert that opens after the baseline outside
those intervals is a false alert.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sinks.clickhouse import ClickHouseWriter, data_dir_dsn

NS_PER_S = 1_000_000_000
ALLOCATION_BYTES = 2 << 30


@dataclass(frozen=True)
class HandFault:
    """A fault made on this host: what, which subsystem it should be attributed to, and when (epoch ns)."""

    name: str
    subsystem: str
    start_ns: int
    end_ns: int


def burner_command() -> list[str]:
    code = ("import multiprocessing as m, time\n"
            "def burn(end):\n"
            "    while time.time() < end: pass\n"
            "end = time.time() + 3600\n"
            "ps = [m.Process(target=burn, args=(end,)) for _ in range(m.cpu_count())]\n"
            "[p.start() for p in ps]; [p.join() for p in ps]\n")
    return [sys.executable, "-c", code]


def dd_command(folder: Path) -> list[str]:
    """Writes of 1 MiB synced to disk, over and over, until stopped."""
    target = folder / "reveal-bench-dd"
    return ["bash", "-c", f"while true; do dd if=/dev/zero of={target} bs=1M count=64 oflag=dsync status=none; done"]


def allocation_command() -> list[str]:
    code = (f"import time\nb = bytearray({ALLOCATION_BYTES})\n"
            "for i in range(0, len(b), 4096): b[i] = 1\n"
            "time.sleep(3600)\n")
    return [sys.executable, "-c", code]


FAULTS: tuple[tuple[str, str, Callable[[Path], list[str]]], ...] = (
    ("cpu burner", "cpu", lambda folder: burner_command()),
    ("dd write burst", "storage", dd_command),
    ("2 GiB allocation", "memory", lambda folder: allocation_command()),
)


def run_bench(baseline_s: float, fault_s: float, gap_s: float, clean_s: float, grace_s: float, data_dir: Path | None,
              progress: Callable[[str], None] = print) -> dict:
    """Run `reveal run`, make the faults, leave the host alone, and judge the stored alerts."""
    folder = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="reveal-host-faults-"))
    folder.mkdir(parents=True, exist_ok=True)
    settle_s, warmup_windows = 20.0, int(baseline_s) - 3
    duration = settle_s + baseline_s + len(FAULTS) * (fault_s + gap_s) + clean_s + 15
    progress(f"host-faults: reveal run for {duration:.0f} s (baseline {baseline_s:.0f} s, then "
             f"{len(FAULTS)} faults of {fault_s:.0f} s, then {clean_s:.0f} s clean), data in {folder}")
    runner = subprocess.Popen([sys.executable, "-m", "reveal.cli", "run", "--duration", f"{duration:.0f}",
                               "--data-dir", str(folder / "data"), "--settle", f"{settle_s:g}", "--quiet",
                               "--warmup-windows", str(warmup_windows), "--host", "bench-host",
                               "--cluster", "host-faults", "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    started_ns = time.time_ns()
    try:
        judged_from_ns = started_ns + round((settle_s + baseline_s + 5) * NS_PER_S)
        _sleep_until(judged_from_ns)
        faults = [_make_fault(name, subsystem, command(folder), fault_s, gap_s, progress)
                  for name, subsystem, command in FAULTS]
        progress(f"host-faults: faults done; {clean_s:.0f} s of clean running")
        if runner.wait() != 0:
            raise RuntimeError(f"reveal run failed: {runner.stderr.read().strip()[-500:]}")
    finally:
        if runner.poll() is None:
            runner.terminate()
            runner.wait()
        (folder / "reveal-bench-dd").unlink(missing_ok=True)
    result = judge(folder / "data", faults, judged_from_ns, grace_s)
    if data_dir is None:
        shutil.rmtree(folder, ignore_errors=True)
    return result


def _sleep_until(instant_ns: int) -> None:
    time.sleep(max(0.0, (instant_ns - time.time_ns()) / NS_PER_S))


def _make_fault(name: str, subsystem: str, command: list[str], fault_s: float, gap_s: float,
                progress: Callable[[str], None]) -> HandFault:
    progress(f"host-faults: {name} for {fault_s:.0f} s")
    start = time.time_ns()
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    time.sleep(fault_s)
    os.killpg(process.pid, 9)
    process.wait()
    end = time.time_ns()
    time.sleep(gap_s)
    return HandFault(name, subsystem, start, end)


def judge(data_dir: Path, faults: list[HandFault], judged_from_ns: int, grace_s: float) -> dict:
    """Each fault's first alert (delay, subsystem, claim) and the false alerts of the judged time."""
    writer = ClickHouseWriter(data_dir_dsn(str(data_dir)))
    _, rows = writer.query("SELECT alert_id, kind, subsystem, summary, toUnixTimestamp64Nano(min(end)) AS opened "
                           "FROM alerts FINAL GROUP BY alert_id, kind, subsystem, summary ORDER BY opened")
    openings: dict[str, tuple] = {}
    for alert_id, kind, subsystem, summary, opened in rows:
        openings.setdefault(alert_id, (kind, subsystem, summary, int(opened)))
    grace_ns = round(grace_s * NS_PER_S)
    found, used = [], set()
    for fault in faults:
        inside = [(alert_id, o) for alert_id, o in openings.items()
                  if fault.start_ns <= o[3] <= fault.end_ns + grace_ns]
        first = min(inside, key=lambda item: item[1][3], default=None)
        used |= {alert_id for alert_id, _ in inside}
        found.append({"fault": fault.name, "expected_subsystem": fault.subsystem, "found": first is not None,
                      "delay_s": (first[1][3] - fault.start_ns) / NS_PER_S if first else None,
                      "subsystem": first[1][1] if first else "", "claim": first[1][2] if first else ""})
    false = [o for alert_id, o in openings.items() if alert_id not in used and o[3] >= judged_from_ns]
    return {"faults": found, "false_alerts": len(false), "false_alert_summaries": [o[2] for o in false[:10]]}


def print_result(result: dict, clean_s: float, out: Callable[[str], None] = print) -> None:
    out(f"{'fault':<20}{'found':>7}{'delay s':>9}  subsystem (expected)  claim")
    for row in result["faults"]:
        delay = f"{row['delay_s']:.1f}" if row["delay_s"] is not None else "-"
        out(f"{row['fault']:<20}{'yes' if row['found'] else 'NO':>7}{delay:>9}  "
            f"{row['subsystem'] or '-'} ({row['expected_subsystem']})  {row['claim'][:140]}")
    out(f"false alerts in the judged time (faults' intervals excluded, {clean_s:.0f} s clean at the end): "
        f"{result['false_alerts']}")
    for summary in result["false_alert_summaries"]:
        out(f"  {summary[:160]}")
