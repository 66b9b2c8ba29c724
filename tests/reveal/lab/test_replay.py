"""Replaying recordings: frames of several hosts in time order through the live stages, and the incidents, windows
and verdicts scoring reads; an injected step is found on its host, with its subsystem first."""

import numpy as np

from producers.recording import RecordingWriter
from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import Alert, Anomaly, Catalog, Frame
from stream_jobs.engine.host_pipeline import EngineSettings
from reveal.lab.replay import incidents, merged_recordings, replay, reported
from reveal.lab.scoring import JudgedTime, score_run
from reveal.lab.truth import FaultLabel

START_NS = 1_790_000_000_000_000_000
SECOND = 1_000_000_000


def _record(path, host: str, steps=(), seconds: int = 90, seed: int = 0):
    catalog = synthetic_catalog(host, "lab-test")
    writer = RecordingWriter(path)
    writer.on_catalog(catalog)
    for frame in synthetic_frames(catalog, START_NS + seed * 37_000_000, seconds * 10, seed=seed, steps=steps):
        writer.on_frame(frame)
    writer.close()
    return path


def test_recordings_merge_in_time_order_with_each_catalog_first(tmp_path):
    paths = [_record(tmp_path / f"h{i}.avro", f"h{i}", seconds=5, seed=i) for i in (1, 2)]
    items = list(merged_recordings(paths))
    frames = [i for i in items if isinstance(i, Frame)]
    assert len(frames) == 100 and {f.host for f in frames} == {"h1", "h2"}
    assert [f.timestamp_ns for f in frames] == sorted(f.timestamp_ns for f in frames)
    for host in ("h1", "h2"):
        first_catalog = next(n for n, i in enumerate(items) if isinstance(i, Catalog) and i.host == host)
        first_frame = next(n for n, i in enumerate(items) if isinstance(i, Frame) and i.host == host)
        assert first_catalog < first_frame


def test_a_step_on_one_host_is_found_there_and_attributed_to_its_subsystem(tmp_path):
    step = StepChange("cpu.busy.cpu3", 60.0, 25.0)
    paths = [_record(tmp_path / "h1.avro", "h1", seed=1), _record(tmp_path / "h2.avro", "h2", (step,), seed=2)]
    settings = EngineSettings(warmup_s=45, seed=3)
    outputs = reported(replay(merged_recordings(paths), settings))
    truth = [FaultLabel("cpu_contention", "h2", START_NS + 60 * SECOND, START_NS + 90 * SECOND, "cpu", 1.0)]
    score = score_run(truth, outputs, JudgedTime(START_NS + 50 * SECOND, START_NS + 90 * SECOND, 2))
    assert score.overall.detected == 1
    matched = [i for i in outputs.incidents if i.host == "h2" and i.opened_ns >= truth[0].start_ns]
    assert matched and matched[0].subsystems[0] == "cpu"
    assert outputs.windows and all(w.host in ("h1", "h2") for w in outputs.windows)


def test_replay_is_deterministic(tmp_path):
    step = StepChange("net.rx_bytes.eth1", 60.0, 5e6)
    paths = [_record(tmp_path / "h1.avro", "h1", (step,), seed=4)]
    settings = EngineSettings(warmup_s=45, seed=3)
    first, second = (reported(replay(merged_recordings(paths), settings)) for _ in range(2))
    assert first == second


def _alert(alert_id, host, start_s, end_s, severity=1.0, subsystem="cpu", state="open", kind="anomaly"):
    return Alert(alert_id, host, "c", state, START_NS + start_s * SECOND, START_NS + end_s * SECOND, severity,
                 subsystem, "", "", kind)


def _anomaly(host, start_s, subsystem, score=2.0):
    return Anomaly(host, "c", start_s, START_NS + start_s * SECOND, START_NS + (start_s + 3) * SECOND, ("zscore",),
                   score, 1.0, subsystem, "", ())


def test_each_alert_is_one_incident_of_its_kind_with_what_it_said_on_opening_first():
    alerts = [_alert("a", "h1", 10, 14), _alert("a", "h1", 10, 20, severity=3.0, state="closed"),
              _alert("b", "h1", 18, 25, severity=5.0, subsystem="network", kind="retransmissions"),
              _alert("d", "h2", 12, 16, subsystem="memory"), _alert("r", "h1", 0, 100, kind="regime")]
    anomalies = [_anomaly("h1", 11, "network"), _anomaly("h1", 15, "network"), _anomaly("h1", 16, "storage"),
                 _anomaly("h2", 12, "memory")]
    found = incidents(alerts, anomalies)
    assert [(i.host, i.kind, (i.opened_ns - START_NS) // SECOND) for i in found] == [
        ("h1", "anomaly", 14), ("h2", "anomaly", 16), ("h1", "retransmissions", 25), ("h1", "regime", 100)]
    first = found[0]
    assert (first.start_ns - START_NS) // SECOND == 10 and (first.end_ns - START_NS) // SECOND == 20
    assert first.subsystems == ("cpu", "network", "storage") and first.severity == 3.0
    assert found[2].subsystems == ("network",)
    assert np.isfinite([i.severity for i in found]).all()


def test_incidents_do_not_depend_on_the_order_their_rows_were_read_in():
    alerts = [_alert("a", "h1", 10, 14, subsystem="cpu"), _alert("b", "h1", 10, 14, subsystem="memory"),
              _alert("b", "h1", 10, 30, severity=9.0, subsystem="memory", state="closed")]
    anomalies = [_anomaly("h1", 11, "network"), _anomaly("h1", 12, "storage"), _anomaly("h1", 20, "cpu"),
                 _anomaly("h1", 21, "memory")]
    stored_order = incidents(alerts, anomalies)
    assert incidents(alerts[::-1], anomalies[::-1]) == stored_order
    assert [i.end_ns for i in stored_order] == sorted(i.end_ns for i in stored_order)
