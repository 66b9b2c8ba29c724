"""The embedded runner's console and totals speak the tables' words and agree with what is stored."""

import io
import re
import uuid

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from sinks.clickhouse import ClickHouseWriter
from sinks.landing import ClickHouseLanding
from stream_jobs.embedded import EmbeddedRunner
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage
from stream_jobs.live_state import LiveState
from stream_jobs.engine.channel_watch import WatchSettings

# A synthetic baseline of 20 windows stands for a host learned over its whole drift horizon (no cold start)
FULL_HORIZON = WatchSettings(drift_horizon_s=20.0)

T0 = 1_700_000_000_000_000_000
STEPS = {"alpha": (StepChange("cpu.busy.cpu1", 60.0, 25.0),), "beta": (StepChange("net.rx_bytes.eth0", 80.0, 5e6),)}


def test_the_summary_counts_what_the_tables_hold_and_the_console_uses_their_words(chdb_dsn):
    database = f"test_embedded_{uuid.uuid4().hex[:10]}"
    writer = ClickHouseWriter(chdb_dsn, database)
    console, live = io.StringIO(), LiveState(warmup_windows=20)
    runner = EmbeddedRunner(HostStage(EngineSettings(warmup_s=20, watch=FULL_HORIZON)), ClickHouseLanding(writer), console, live=live)
    catalogs = {host: synthetic_catalog(host) for host in STEPS}
    frames = {host: synthetic_frames(catalogs[host], T0, 1200, seed=index, steps=steps)
              for index, (host, steps) in enumerate(STEPS.items())}
    for catalog in catalogs.values():
        runner.on_catalog(catalog)
    for index in range(1200):
        for host in STEPS:
            runner.on_frame(frames[host][index])
    runner.close()
    stored = lambda sql: writer.query(sql)[1][0][0]  # noqa: E731
    windows, anomalous = stored("SELECT count() FROM windows"), stored("SELECT countIf(anomalous) FROM windows")
    anomalies = stored("SELECT count() FROM anomalies FINAL")
    incidents = stored("SELECT uniqExact(alert_id) FROM alerts")
    writer.close()
    assert incidents >= 2 and anomalies >= 2
    assert runner.summary() == (f"{windows} windows ({anomalous} anomalous), {anomalies} anomalies, {incidents} "
                                f"incidents ({runner.alerts} alert events)")
    lines = console.getvalue().splitlines()
    assert not any("severity" in line for line in lines if " window " in line)
    assert any(re.search(r"score +\d+\.\d\d / threshold \d+\.\d\d  normal", line) for line in lines)
    assert any("learning baseline" in line and "nothing is judged until it is learned" in line for line in lines)
    assert any(line.startswith("INCIDENT open [") and "severity" in line for line in lines)
    assert sum(host["anomalies"] for host in live.snapshot()["hosts"]) == anomalies


def test_a_learning_line_says_why_and_counts_its_own_spell():
    from stream_jobs.embedded import describe_verdict
    from stream_jobs.engine.verdicts import WindowVerdict

    learning = WindowVerdict(7, T0, T0 + 3 * 10**9, 30, False, float("nan"), float("nan"), False, (), "", "", ())
    first = describe_verdict(learning, 30, 3)
    again = describe_verdict(learning, 30, 3, relearning=True)
    assert "learning baseline 3/30 (learning this host's baseline; nothing is judged until it is learned)" in first
    assert "learning baseline 3/30 (relearning after the channel catalog changed;" in again


def test_the_window_that_completes_the_baseline_is_told_as_learned_not_as_judged(chdb_dsn):
    writer = ClickHouseWriter(chdb_dsn, f"test_embedded_{uuid.uuid4().hex[:10]}")
    console = io.StringIO()
    runner = EmbeddedRunner(HostStage(EngineSettings(warmup_s=20, watch=FULL_HORIZON)), ClickHouseLanding(writer),
                            console)
    catalog = synthetic_catalog("alpha")
    runner.on_catalog(catalog)
    for frame in synthetic_frames(catalog, T0, 300):
        runner.on_frame(frame)
    runner.close()
    writer.close()
    lines = [line for line in console.getvalue().splitlines() if "  window " in line]
    assert all("learning baseline" in line for line in lines[:20]) and "learning baseline 20/20" in lines[19]
    assert lines[20:] and all("score" in line for line in lines[20:])
