"""The first scoring's storage: what a worker stored is read back as scoring reads it, and the lab's own rows land."""

from types import SimpleNamespace

from schemas.records import Alert, Anomaly, Evidence
from sinks.clickhouse import ClickHouseWriter
from sinks.rows import alert_row, anomaly_row
from reveal.lab.ingest import _store_lab, stored_outputs
from reveal.lab.replay import incidents
from reveal.lab.truth import FaultLabel, ReportedWindow, RetransmissionVerdict

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000


def test_stored_alerts_anomalies_windows_and_verdicts_read_back_as_scoring_reads_them(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    alert = Alert("h1:1", "h1", "lab", "open", T0, T0 + 3 * S, 2.5, "cpu", "cpu.user rose", "look at cpu")
    anomaly = Anomaly("h1", "lab", 7, T0, T0 + 3 * S, ("zscore", "mahalanobis"), 4.0, 1.0, "cpu", "cpu.user rose",
                      (Evidence("cpu.user.all", "mean", 90.0, 10.0, 2.0, 40.0),), "hot loop", "look at cpu")
    writer.add("alerts", [alert_row(alert)])
    writer.add("anomalies", [anomaly_row(anomaly), anomaly_row(Anomaly(**{**anomaly.__dict__, "cluster": "other"}))])
    writer.add("windows", [["h1", "lab", 7, T0, T0 + 3 * S, 30, 1, 4.0, 1.0, 1, [], [], [], [], ""],
                           ["h1", "lab", 1, T0 - 6 * S, T0 - 3 * S, 30, 0, 0.0, 0.0, 0, [], [], [], [], ""]])
    writer.add("retransmissions", [["h1", "lab", 7, T0, T0 + 3 * S, "fault-induced", "this host alone", 40.0,
                                    1000.0, 6.0]])
    writer.flush()
    outputs = stored_outputs(writer, "lab")
    read_anomaly = Anomaly(**{**anomaly.__dict__, "evidence": (), "explanation": "", "hint": ""})
    assert outputs.incidents == incidents([alert], [read_anomaly])
    assert outputs.windows == [ReportedWindow("h1", T0, T0 + 3 * S, True)]
    assert outputs.retransmissions == [RetransmissionVerdict("h1", T0, T0 + 3 * S, "fault-induced")]


def test_a_runs_faults_and_scores_are_stored_in_their_tables(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    label = FaultLabel("cpu_contention", "h1", T0, T0 + 60 * S, "cpu", 2.0, "2 workers", True, {"cpu_seconds": 1.5})
    run = SimpleNamespace(meta={"run_id": "run-1", "scenario": "cpu-hog"}, truth=[label])
    _store_lab(writer, run, {"calibrated": {"precision": 0.9}})
    _, faults = writer.query("SELECT run_id, fault, host, toUnixTimestamp64Nano(end), took_effect, effect "
                             "FROM lab_faults")
    assert faults == [("run-1", "cpu_contention", "h1", T0 + 60 * S, True, '{"cpu_seconds": 1.5}')]
    _, scores = writer.query("SELECT run_id, scenario, thresholds, metric, value FROM lab_scores")
    assert scores == [("run-1", "cpu-hog", "calibrated", "precision", 0.9)]
