"""The pipeline benchmark's probes: what the findings listener counts as an opening, and from which stage."""

from schemas.records import Alert, Anomaly, encode_alert, encode_anomaly
from reveal.bench.pipeline_probes import Finding, finding_of


def anomaly(detectors: tuple[str, ...]) -> Anomaly:
    return Anomaly("h1", "bench", 7, 4_000_000_000, 7_000_000_000, detectors, 9.0, 1.0, "cpu", "claim", ())


def alert(state: str, kind: str = "anomaly") -> Alert:
    return Alert("a1", "h1", "bench", state, 5_000_000_000, 7_000_000_000, 3.0, "cpu", "summary", kind=kind)


def test_findings_tell_host_detectors_from_the_cluster_stage_and_keep_only_openings():
    assert finding_of("anomaly", encode_anomaly(anomaly(("zscore",))), 9) == Finding("anomaly", "h1", 7_000_000_000, 9)
    assert finding_of("anomaly", encode_anomaly(anomaly(("peer",))), 9).kind == "peer-anomaly"
    assert finding_of("alert", encode_alert(alert("open")), 9) == Finding("alert", "h1", 7_000_000_000, 9)
    assert finding_of("alert", encode_alert(alert("open", kind="retransmissions")), 9).kind == "peer-alert"
    assert finding_of("alert", encode_alert(alert("update")), 9) is None
    assert finding_of("anomaly", b"\x00not a record", 9) is None
