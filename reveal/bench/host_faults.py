"""`reveal bench host-faults`: Reveal embedded on this host, judged on faults made by hand and on a long clean stretch.

`reveal run` learns this host's baseline (from a cold start when it is short); once the run's own state says it is
learned (a slow start never puts a fault inside the baseline), four faults are made one after another, each for `fault_s`: a CPU burner (one busy process per core), a burst of `dd` writes synced to disk, a 2 GiB
allocation touched page by page and a fork storm. Then the host is left alone for `clean_s`, while, as an operator
would, the live page may stay open in headless Chromium and `reveal sql` and `reveal report` may be pointed at the
run every `visit_every_s`. Afterwards the alerts stored in the run's embedded ClickHouse are judged: a fault is found
by an alert that opens between its start and `grace_s` after its end (delay from its start), with the subsystem it
names, its claim, and whether the claim's first channel moved; every alert that opens after the baseline outside
those intervals is a false alert.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from sinks.clickhouse import ClickHouseWriter, data_dir_dsn

NS_PER_S = 1_000_000_000
ALLOCATION_BYTES = 2 << 30
# A claimed channel moved when its mean from the fault's start to the alert lies this many standard deviations of
# the seconds before the fault from their mean (or its spread grew as many times)
MOVED_BY_SIGMA = 3.0
BEFORE_FAULT_S = 30.0
# What `reveal run` may take to start and learn beyond its plan (a busy host imports slowly)
STARTUP_ALLOWANCE_S = 300.0
_NAMED_CHANNEL = re.compile(r"[;,] (\S+) \S+ z=[+-]")


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


def fork_storm_command() -> list[str]:
    """Short-lived processes started one after another as fast as the shell can, until stopped."""
    return ["bash", "-c", "while true; do /bin/true; done"]


FAULTS: tuple[tuple[str, str, Callable[[Path], list[str]]], ...] = (
    ("cpu burner", "cpu", lambda folder: burner_command()),
    ("dd write burst", "storage", dd_command),
    ("2 GiB allocation", "memory", lambda folder: allocation_command()),
    ("fork storm", "cpu", lambda folder: fork_storm_command()),
)


@dataclass(frozen=True)
class BenchPlan:
    """How long each part of the bench lasts (seconds), and what an operator does meanwhile."""

    baseline_s: float = 600.0
    fault_s: float = 20.0
    gap_s: float = 60.0
    clean_s: float = 1800.0
    grace_s: float = 5.0
    within_s: float = 5.0
    faults: bool = True
    visit_every_s: float = 0.0
    browser: str | None = None

    @property
    def settle_s(self) -> float:
        return 20.0

    def duration_s(self) -> float:
        faults = len(FAULTS) * (self.fault_s + self.gap_s) if self.faults else 0.0
        return self.settle_s + self.baseline_s + faults + self.clean_s + 15

    def run_limit_s(self) -> float:
        """How long `reveal run` may run at most: the plan, and time for it to start (the bench stops it when the
        clean stretch ends)."""
        return self.duration_s() + STARTUP_ALLOWANCE_S


def run_bench(plan: BenchPlan, data_dir: Path | None, progress: Callable[[str], None] = print) -> dict:
    """Run `reveal run`, make the faults, leave the host alone (visited as planned), and judge the stored alerts."""
    folder = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="reveal-host-faults-"))
    folder.mkdir(parents=True, exist_ok=True)
    progress(f"host-faults: reveal run for about {plan.duration_s():.0f} s (baseline {plan.baseline_s:.0f} s, then "
             f"{len(FAULTS) if plan.faults else 0} faults of {plan.fault_s:.0f} s, then {plan.clean_s:.0f} s clean), "
             f"data in {folder}")
    (folder / "data" / "live.json").unlink(missing_ok=True)
    runner = subprocess.Popen([sys.executable, "-m", "reveal.cli", "run", "--duration", f"{plan.run_limit_s():.0f}",
                               "--data-dir", str(folder / "data"), "--settle", f"{plan.settle_s:g}", "--quiet",
                               "--warmup-windows", str(max(10, int(plan.baseline_s) - 3)), "--host", "bench-host",
                               "--cluster", "host-faults", "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    started_ns, browser, reader = time.time_ns(), None, None
    try:
        url = _announced_url(folder, runner)
        browser = _open_page(plan.browser, url, folder, progress) if plan.browser else None
        reader = StateReader(url)
        reader.start()
        learned_ns = _wait_until_learned(reader, runner, plan.run_limit_s())
        progress(f"host-faults: baseline learned {(learned_ns - started_ns) / NS_PER_S:.0f} s after the start")
        judged_from_ns = learned_ns + round(5 * NS_PER_S)
        _sleep_until(judged_from_ns)
        faults = [_make_fault(name, subsystem, command(folder), plan.fault_s, plan.gap_s, progress)
                  for name, subsystem, command in FAULTS] if plan.faults else []
        progress(f"host-faults: {plan.clean_s:.0f} s of clean running"
                 + (f", reveal sql and reveal report every {plan.visit_every_s:g} s" if plan.visit_every_s else ""))
        visits = _visit_until(runner, folder, plan.visit_every_s, time.time_ns() + round(plan.clean_s * NS_PER_S))
        runner.terminate()
        runner.wait()
        if runner.returncode != 0:
            raise RuntimeError(f"reveal run failed: {_stderr_tail(runner)}")
    finally:
        if reader is not None:
            reader.stop()
        _stop(runner, browser)
        (folder / "reveal-bench-dd").unlink(missing_ok=True)
    result = {**judge(folder / "data", faults, judged_from_ns, plan.grace_s, plan.within_s), "visits": visits,
              "page_open": browser is not None}
    if data_dir is None:
        shutil.rmtree(folder, ignore_errors=True)
    return result


def _announced_url(folder: Path, runner: subprocess.Popen) -> str:
    """The address the run serves its live page and state on, once it has announced it."""
    announced = folder / "data" / "live.json"
    deadline = time.monotonic() + STARTUP_ALLOWANCE_S
    while not announced.exists():
        if runner.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"reveal run did not start: {_stderr_tail(runner)}")
        time.sleep(0.5)
    return json.loads(announced.read_text())["url"]


class StateReader(threading.Thread):
    """Reads the run's own state every second for the whole run, as an operator's open page would: the faults wait
    until it says the baseline is learned, and the reading goes on at the same pace after (a reader that stopped once
    the baseline was learned would itself change the host's loopback traffic just before the first fault)."""

    def __init__(self, url: str, every_s: float = 1.0):
        super().__init__(daemon=True)
        self.url, self.every_s = url, every_s
        self.learned_ns: int | None = None
        self.reads = 0
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.is_set():
            hosts = self._hosts()
            if self.learned_ns is None and hosts and all(h["windows"] > 0 and not h["learning"] for h in hosts):
                self.learned_ns = time.time_ns()
            self._stopped.wait(self.every_s)

    def stop(self) -> None:
        self._stopped.set()

    def _hosts(self) -> list[dict]:
        try:
            with urllib.request.urlopen(f"{self.url}/api/state", timeout=5) as response:
                return json.load(response).get("hosts", [])
        except (OSError, ValueError):
            return []
        finally:
            self.reads += 1


def _wait_until_learned(reader: StateReader, runner: subprocess.Popen, limit_s: float) -> int:
    """When (epoch ns) the run's host has learned its baseline, as its own state said: faults made while it still
    learns would be learned as normal."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and runner.poll() is None:
        if reader.learned_ns is not None:
            return reader.learned_ns
        time.sleep(0.2)
    raise RuntimeError("reveal run never finished learning its baseline"
                       + (f": {_stderr_tail(runner)}" if runner.poll() is not None else ""))


def _stderr_tail(runner: subprocess.Popen) -> str:
    """The last of what the run wrote to its error stream, once it has ended."""
    return runner.stderr.read().strip()[-500:] if runner.stderr is not None else ""


def _open_page(browser: str, url: str, folder: Path, progress: Callable[[str], None]) -> subprocess.Popen:
    """Headless Chromium on the run's live page, kept open (it polls as an operator's browser does)."""
    progress(f"host-faults: live page {url} open in {browser}")
    return subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             "--remote-debugging-port=0", f"--user-data-dir={folder / 'browser-profile'}", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _visit_until(runner: subprocess.Popen, folder: Path, every_s: float, until_ns: int) -> int:
    """Point `reveal sql` and `reveal report` at the run every `every_s` (if at all) until `until_ns` or its end;
    how many times."""
    visits = 0
    while runner.poll() is None and time.time_ns() < until_ns:
        if not every_s:
            _sleep_until(until_ns)
            break
        _sleep_until(min(until_ns, time.time_ns() + round(every_s * NS_PER_S)))
        if runner.poll() is not None or time.time_ns() >= until_ns:
            break
        for command in (["sql", "--query", "open-incidents"], ["report", "--out", str(folder / "report.html")]):
            subprocess.run([sys.executable, "-m", "reveal", command[0], "--data-dir", str(folder / "data"),
                            *command[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
        visits += 1
    return visits


def _stop(runner: subprocess.Popen, browser: subprocess.Popen | None) -> None:
    if browser is not None and browser.poll() is None:
        os.killpg(browser.pid, 9)
        browser.wait()
    if runner.poll() is None:
        runner.terminate()
        runner.wait()


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


def judge(data_dir: Path, faults: list[HandFault], judged_from_ns: int, grace_s: float, within_s: float = 5.0) -> dict:
    """Each fault's first alert (the most severe of those one window opened: the headline an operator reads) with its
    delay, subsystem, claim, whether it came within `within_s` and whether its first channel moved; and the false
    alerts of the judged time."""
    writer = ClickHouseWriter(data_dir_dsn(str(data_dir)))
    try:
        _, rows = writer.query("SELECT alert_id, kind, subsystem, summary, toUnixTimestamp64Nano(min(end)) AS opened, "
                               "any(host), max(severity) AS severity FROM alerts FINAL "
                               "GROUP BY alert_id, kind, subsystem, summary ORDER BY opened, severity DESC, alert_id")
        openings: dict[str, tuple] = {}
        for alert_id, kind, subsystem, summary, opened, host, _ in rows:
            openings.setdefault(alert_id, (kind, subsystem, summary, int(opened), host))
        grace_ns = round(grace_s * NS_PER_S)
        found, used = [], set()
        for fault in faults:
            inside = [(alert_id, o) for alert_id, o in openings.items()
                      if fault.start_ns <= o[3] <= fault.end_ns + grace_ns]
            first = min(inside, key=lambda item: item[1][3], default=None)
            used |= {alert_id for alert_id, _ in inside}
            found.append(_found(writer, fault, first[1] if first else None, within_s))
    finally:
        writer.close()
    false = [o for alert_id, o in openings.items() if alert_id not in used and o[3] >= judged_from_ns]
    return {"faults": found, "false_alerts": len(false), "false_alert_summaries": [o[2] for o in false[:10]]}


def _found(writer: ClickHouseWriter, fault: HandFault, opening: tuple | None, within_s: float) -> dict:
    delay = (opening[3] - fault.start_ns) / NS_PER_S if opening else None
    channel = first_stored(writer, opening[4], claimed_channels(opening[2])) if opening else None
    return {"fault": fault.name, "expected_subsystem": fault.subsystem, "found": opening is not None,
            "delay_s": delay, "within": delay is not None and delay <= within_s,
            "subsystem": opening[1] if opening else "", "claim": opening[2] if opening else "",
            "channel": channel or "",
            "moved": bool(channel) and channel_moved(writer, opening[4], channel, fault.start_ns, opening[3])}


def claimed_channels(summary: str) -> list[str]:
    """The channels an alert's summary names, in its order ('…; cpu.user.all mean z=+12.0, mem.Dirty std z=-3.0')."""
    return _NAMED_CHANNEL.findall(summary)


def first_stored(writer: ClickHouseWriter, host: str, channels: list[str]) -> str | None:
    """The first of the channels whose samples the run stored: a derived channel (CPU busy %, IPC) is computed by the
    engine from stored ones, and what moved is judged on those."""
    if not channels:
        return None
    _, rows = writer.query("SELECT DISTINCT arrayJoin(names) FROM catalogs WHERE host = {h:String}", {"h": host})
    stored = {row[0] for row in rows}
    return next((channel for channel in channels if channel in stored), None)


def channel_moved(writer: ClickHouseWriter, host: str, channel: str, start_ns: int, opened_ns: int) -> bool:
    """Whether the channel's stored values (as rates, for counters) from the fault's start to the alert lie
    MOVED_BY_SIGMA standard deviations of the BEFORE_FAULT_S before it from their mean, or spread as many times."""
    _, kinds = writer.query("SELECT any(kinds[indexOf(names, {c:String})]) FROM catalogs WHERE host = {h:String} "
                            "AND has(names, {c:String})", {"c": channel, "h": host})
    quoted = channel.replace("\\", "\\\\").replace("'", "\\'")
    _, rows = writer.query(f"SELECT toUnixTimestamp64Nano(ts), value FROM channel_values(name = '{quoted}') "
                           "WHERE host = {h:String} AND ts >= fromUnixTimestamp64Nano({a:Int64}) "
                           "AND ts <= fromUnixTimestamp64Nano({b:Int64}) ORDER BY ts",
                           {"h": host, "a": start_ns - round(BEFORE_FAULT_S * NS_PER_S), "b": opened_ns})
    if not rows or not kinds or not kinds[0][0]:
        return False
    times, values = np.array([r[0] for r in rows], dtype=np.float64), np.array([r[1] for r in rows], np.float64)
    if kinds[0][0] == "counter":
        times, values = times[1:], np.diff(values) / np.maximum(np.diff(times) / NS_PER_S, 1e-3)
    before, after = values[times < start_ns], values[times >= start_ns]
    if len(before) < 3 or len(after) < 1:
        return False
    sigma = max(float(np.nanstd(before)), 1e-9)
    shifted = abs(float(np.nanmean(after)) - float(np.nanmean(before))) >= MOVED_BY_SIGMA * sigma
    return shifted or float(np.nanstd(after)) >= MOVED_BY_SIGMA * sigma


def print_result(result: dict, clean_s: float, out: Callable[[str], None] = print) -> None:
    out(f"{'fault':<20}{'found':>7}{'delay s':>9}{'in time':>9}{'moved':>7}  subsystem (expected)  claim")
    for row in result["faults"]:
        delay = f"{row['delay_s']:.1f}" if row["delay_s"] is not None else "-"
        out(f"{row['fault']:<20}{'yes' if row['found'] else 'NO':>7}{delay:>9}"
            f"{'yes' if row.get('within') else 'no':>9}{'yes' if row.get('moved') else 'no':>7}  "
            f"{row['subsystem'] or '-'} ({row['expected_subsystem']})  {row['claim'][:140]}")
    visits = result.get("visits", 0)
    company = (f"; live page open: {'yes' if result.get('page_open') else 'no'}, reveal sql + report pointed at the "
               f"run {visits} times")
    out(f"false alerts in the judged time (faults' intervals excluded, {clean_s:.0f} s clean at the end{company}): "
        f"{result['false_alerts']}")
    for summary in result["false_alert_summaries"]:
        out(f"  {summary[:160]}")
