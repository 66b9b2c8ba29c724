"""The cluster stage over host-window summaries made by the real host stage."""

from dataclasses import replace

import numpy as np

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import HostWindow, PersistedChannel
from stream_jobs.engine.severity import severity_scale
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.decide.settings import DecisionSettings
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000


def cluster_stage(peer_learn_s=120.0, peer_hold_s=300.0) -> ClusterStage:
    return ClusterStage(EngineSettings(decision=DecisionSettings(peer_learn_s=peer_learn_s, peer_hold_s=peer_hold_s)))


def run_cluster(hosts: int, misconfigured: str | None, frames: int = 600):
    """Hosts of one cluster; the misconfigured one reports 1.5× the memory of its peers (a static channel)."""
    host_stage = HostStage(EngineSettings(warmup_s=20))
    stage = cluster_stage(peer_learn_s=10, peer_hold_s=5)
    streams = []
    for index in range(hosts):
        catalog = synthetic_catalog(f"h{index}", cluster="train-a")
        host_stage.on_catalog(catalog)
        stream = synthetic_frames(catalog, T0, frames, seed=index)
        if catalog.host == misconfigured:
            column = catalog.names.index("mem.MemTotal")
            for frame in stream:
                frame.values[column] *= 1.5
        streams.append(stream)
    anomalies, alerts = [], []
    for step in range(frames):
        for stream in streams:
            for summary in host_stage.on_frame(stream[step]).host_windows:
                output = stage.on_host_window(summary)
                anomalies += output.anomalies
                alerts += output.alerts
    final = stage.flush()
    return anomalies + final.anomalies, alerts + final.alerts


def test_a_host_configured_unlike_its_peers_is_one_configuration_finding():
    anomalies, alerts = run_cluster(4, "h2")
    [finding] = anomalies
    assert (finding.host, finding.detectors, finding.evidence[0].channel) == ("h2", ("configuration",), "mem.MemTotal")
    assert "configured unlike its 3 peers" in finding.claim
    assert [(a.host, a.kind, a.state) for a in alerts] == [("h2", "configuration", "closed")]


def test_identical_hosts_raise_no_peer_anomaly():
    anomalies, alerts = run_cluster(4, None)
    assert anomalies == [] and alerts == []


def test_a_single_host_has_no_peers_to_compare_with():
    anomalies, _ = run_cluster(1, None, frames=300)
    assert anomalies == []


def _summaries_by_host(hosts: int, frames: int = 900, own_findings: bool = True) -> dict[str, list]:
    """Each host's window summaries, in its own order; h1 drifts away from its peers on a dynamic channel (without
    `own_findings`, as if its own band had taken the change in, so the peers tell it)."""
    host_stage = HostStage(EngineSettings(warmup_s=20))
    by_host = {}
    for index in range(hosts):
        catalog = synthetic_catalog(f"h{index}", cluster="train-b")
        host_stage.on_catalog(catalog)
        steps = (StepChange("cpu.busy.cpu3", 50.0, 30.0),) if index == 1 else ()
        stream = synthetic_frames(catalog, T0 + index * 11_000_000, frames, seed=index, steps=steps)
        by_host[catalog.host] = [s if own_findings else _without_own_findings(s)
                                 for frame in stream for s in host_stage.on_frame(frame).host_windows]
    return by_host


def _without_own_findings(summary: HostWindow) -> HostWindow:
    """The summary as if the host's own bands held every channel (still learning, if it was)."""
    departures = None if summary.departures is None else np.zeros_like(summary.departures)
    return replace(summary, flagged=False, persisted=(), departures=departures)


def _outputs(order) -> tuple:
    stage = cluster_stage(peer_learn_s=10, peer_hold_s=5)
    anomalies, alerts, verdicts = [], [], []
    for summary in order:
        output = stage.on_host_window(summary)
        anomalies += output.anomalies
        alerts += output.alerts
        verdicts += output.retransmission_rows
    final = stage.flush()
    return ([(a.host, a.window_id, a.claim) for a in anomalies + final.anomalies],
            [(a.alert_id, a.state, a.end_ns) for a in alerts + final.alerts], verdicts + final.retransmission_rows)


def test_what_is_compared_does_not_depend_on_the_order_hosts_report_in():
    by_host = _summaries_by_host(4, own_findings=False)
    lockstep = sorted((s for summaries in by_host.values() for s in summaries), key=lambda s: (s.window_id, s.host))
    batched = []
    for start in range(0, max(len(v) for v in by_host.values()), 12):
        for host in sorted(by_host, reverse=start % 24 == 0):
            batched += by_host[host][start:start + 12]
    in_lockstep, in_batches = _outputs(lockstep), _outputs(batched)
    assert in_lockstep[0], "no peer finding to compare"
    assert in_batches == in_lockstep


def test_a_host_read_far_behind_its_peers_raises_the_same_host_incidents():
    by_host = _summaries_by_host(4)
    lockstep = sorted((s for summaries in by_host.values() for s in summaries), key=lambda s: (s.window_id, s.host))
    behind = [s for host in sorted(by_host) if host != "h1" for s in by_host[host]] + by_host["h1"]
    own_findings = lambda alerts: [alert for alert in alerts if "/anomaly:" in alert[0]]  # noqa: E731
    in_lockstep = own_findings(_outputs(lockstep)[1])
    assert any(alert_id.startswith("h1/anomaly:cpu") for alert_id, _, _ in in_lockstep), "the step is not found"
    assert own_findings(_outputs(behind)[1]) == in_lockstep


def _window(host: str, window_id: int, departing: dict[str, float], persisted: tuple[str, ...],
            feature: str = "mean") -> HostWindow:
    """A summary of two channels: how far each lies outside its band, and which of them have persisted (by the
    feature given)."""
    names = ("cpu.busy", "net.tx_bytes")
    subsystem = {"cpu.busy": "cpu", "net.tx_bytes": "network"}
    return HostWindow(host, "c", window_id, T0 + window_id * 10**9, T0 + (window_id + 3) * 10**9, 1, names,
                      np.zeros(2), bool(persisted), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      np.array([departing.get(name, 0.0) for name in names]),
                      tuple(PersistedChannel(names.index(n), 9.0, subsystem[n], feature) for n in persisted))


def test_a_change_a_peer_showed_a_few_windows_earlier_is_the_jobs_not_the_hosts():
    stage, opened = cluster_stage(), []
    for window_id in range(60):
        late_on_network = 20 <= window_id < 24
        summaries = [
            _window("h0", window_id, {"net.tx_bytes": 3.0} if late_on_network else {},
                    ("net.tx_bytes",) if late_on_network else ()),
            _window("h1", window_id, {"net.tx_bytes": 2.0} if 16 <= window_id < 19 else {}, ()),
            _window("h2", window_id, {"cpu.busy": 3.0} if late_on_network else {},
                    ("cpu.busy",) if late_on_network else ())]
        for summary in summaries:
            opened += [a.alert_id for a in stage.on_host_window(summary).alerts if a.state == "open"]
    opened += [a.alert_id for a in stage.flush().alerts if a.state == "open"]
    assert [alert_id.split(":")[0] for alert_id in opened] == ["h2/anomaly"]


def test_a_change_the_host_told_as_its_own_is_not_told_again_as_a_peer_finding():
    stage = cluster_stage(peer_learn_s=10, peer_hold_s=20)
    names = ("mem.file_bytes", "net.rx_bytes")
    peer_findings = []
    for window_id in range(80):
        for host in ("h0", "h1", "h2", "h3"):
            means = np.array([100.0, 100.0])
            if window_id >= 30 and host == "h0":
                means[0] = 200.0  # h0's own watch saw this one move
            if window_id >= 30 and host == "h3":
                means[1] = 200.0  # h3's own band took this one in without a finding
            told = host == "h0" and 30 <= window_id < 40
            summary = HostWindow(host, "c", window_id, T0 + window_id * 10**9, T0 + (window_id + 3) * 10**9, 1,
                                 names, means, told, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                                 np.array([2.0 if told else 0.0, 0.0]),
                                 (PersistedChannel(0, 9.0, "memory"),) if told else ())
            peer_findings += [(a.host, a.evidence[0].channel) for a in stage.on_host_window(summary).anomalies
                              if a.detectors == ("peer",)]
    assert ("h3", "net.rx_bytes") in peer_findings
    assert not any(host == "h0" for host, _ in peer_findings)


def _opened_by_runs(runs: dict[str, tuple[int, int, float]], feature: str = "mean") -> list[tuple[str, int]]:
    """Each host's own cpu finding (by `feature`) over windows [first, last) at a departure; the (host, first window)
    of every incident opened."""
    stage, opened = cluster_stage(), []
    for window_id in range(60):
        for host, (first, last, departure) in runs.items():
            out = first <= window_id < last
            summary = _window(host, window_id, {"cpu.busy": departure} if out else {}, ("cpu.busy",) if out else (),
                              feature)
            opened += [(a.host, a.start_ns) for a in stage.on_host_window(summary).alerts if a.state == "open"]
    opened += [(a.host, a.start_ns) for a in stage.flush().alerts if a.state == "open"]
    return [(host.split("/")[0], (start - T0) // 10**9) for host, start in opened]


def test_a_weak_finding_of_one_window_opens_nothing_but_one_held_or_clearly_out_opens_at_once():
    assert _opened_by_runs({"h0": (10, 11, 1.5), "h1": (25, 27, 1.5), "h2": (40, 41, 3.0), "h3": (0, 0, 0.0)}) \
        == [("h1", 25), ("h2", 40)]


def test_a_spread_far_out_for_one_window_opens_nothing_but_held_a_second_it_does():
    assert _opened_by_runs({"h0": (10, 11, 40.0), "h1": (25, 27, 40.0), "h2": (0, 0, 0.0)}, feature="std") \
        == [("h1", 25)]


CHANNELS = {"disk.busy": "storage", "mem.dirty": "memory", "cpu.iowait": "cpu", "mem.anon": "memory",
            "cpu.busy": "cpu"}


def _host_window(window_id: int, departing: dict[str, float], reported: dict[str, float] | None = None) -> HostWindow:
    """One host's summary of the CHANNELS: the persisted ones with their departures, and `reported` as the channels'
    largest departure over all their features (the persisted ones' unless given)."""
    names = tuple(CHANNELS)
    reported = departing if reported is None else reported
    return HostWindow("h0", "c", window_id, T0 + window_id * 10**9, T0 + (window_id + 3) * 10**9, 1, names,
                      np.zeros(len(names)), bool(departing), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      np.array([reported.get(name, 0.0) for name in names]),
                      tuple(PersistedChannel(names.index(n), d, CHANNELS[n], "mean", d) for n, d in departing.items()))


def _opened(windows: list[HostWindow]) -> list:
    stage, alerts = cluster_stage(), []
    for summary in windows:
        alerts += stage.on_host_window(summary).alerts
    alerts += stage.flush().alerts
    return [a for a in alerts if a.state == "open"]


def test_causes_that_begin_within_seconds_are_one_incident_and_a_channel_that_departs_later_is_a_new_one():
    """A burst of writes fills the disk queue, dirties pages and raises I/O wait within a few windows: one
    incident, named for its strongest channel. A memory channel that departs a minute later, while the disk is still
    busy, is a new cause with its incident, though a channel of its subsystem joined the first."""
    windows = []
    for window_id in range(120):
        departing = {}
        if 10 <= window_id < 100:
            departing["disk.busy"] = 50.0
        if 11 <= window_id < 40:
            departing["mem.dirty"] = 20.0
        if 13 <= window_id < 40:
            departing["cpu.iowait"] = 12.0
        if 70 <= window_id < 90:
            departing["mem.anon"] = 30.0
        windows.append(_host_window(window_id, departing))
    opened = _opened(windows)
    assert [((a.start_ns - T0) // 10**9, a.subsystem) for a in opened] == [(10, "storage"), (70, "memory")]
    assert "disk.busy" in opened[0].summary and "mem.anon" in opened[1].summary


def test_an_incidents_severity_is_that_of_the_feature_that_persisted():
    """A channel's spread may lie far out for a window while its mean is what persisted, just out: the finding is
    weak (one window opens nothing; two open it at the mean's departure), not thousands of band widths."""
    far_spread = {"mem.dirty": 3050.0}
    one_window = [_host_window(w, {"mem.dirty": 1.5} if w == 10 else {}, far_spread if w == 10 else {})
                  for w in range(40)]
    assert _opened(one_window) == []
    two_windows = [_host_window(w, {"mem.dirty": 1.5} if w in (10, 11) else {}, far_spread if w in (10, 11) else {})
                   for w in range(40)]
    [incident] = _opened(two_windows)
    assert incident.severity == severity_scale(1.5) and (incident.start_ns - T0) // 10**9 == 10


def _alerts_of_runs(runs: dict[str, tuple[str, int, int]], windows: int = 80) -> list:
    """Hosts of one cluster, each with one channel far out of its band over windows [first, last)."""
    stage, alerts = cluster_stage(), []
    for window_id in range(windows):
        for host, (channel, first, last) in runs.items():
            out = first <= window_id < last
            summary = _window(host, window_id, {channel: 40.0} if out else {}, (channel,) if out else ())
            alerts += stage.on_host_window(summary).alerts
    return alerts + stage.flush().alerts


def test_an_incident_that_opens_on_a_peer_seconds_after_a_hosts_own_is_told_as_part_of_it():
    alerts = _alerts_of_runs({"h0": ("cpu.busy", 10, 40), "h1": ("net.tx_bytes", 12, 40),
                              "h2": ("net.tx_bytes", 0, 0)})
    assert {a.host for a in alerts} == {"h0"}
    assert [a.state for a in alerts] == ["open", "update", "closed"]
    assert "then on peers: h1 (major network anomaly on h1" in alerts[1].summary
    assert "then on peers: h1" in alerts[2].summary


def test_incidents_that_open_together_or_far_apart_on_peers_are_each_told():
    together = _alerts_of_runs({"h0": ("cpu.busy", 10, 40), "h1": ("net.tx_bytes", 10, 40),
                                "h2": ("net.tx_bytes", 0, 0)})
    apart = _alerts_of_runs({"h0": ("cpu.busy", 10, 40), "h1": ("net.tx_bytes", 20, 40),
                             "h2": ("net.tx_bytes", 0, 0)})
    for alerts in (together, apart):
        assert sorted((a.host, a.state) for a in alerts) == [("h0", "closed"), ("h0", "open"), ("h1", "closed"),
                                                             ("h1", "open")]


def test_a_peer_out_on_a_channel_since_long_before_does_not_hide_the_hosts_own_change_on_it():
    """h1's page cache has been out of its band since a write a minute ago; h0's leaves its band now: h0's change is
    its own, not one it shares with h1 (their departures did not begin together)."""
    stage, opened = cluster_stage(), []
    for window_id in range(120):
        h0_out, h1_out = 70 <= window_id < 100, window_id >= 10
        summaries = [_window("h0", window_id, {"net.tx_bytes": 3.0} if h0_out else {},
                             ("net.tx_bytes",) if h0_out else ()),
                     _window("h1", window_id, {"net.tx_bytes": 3.0} if h1_out else {},
                             ("net.tx_bytes",) if 10 <= window_id < 14 else ()),
                     _window("h2", window_id, {}, ())]
        for summary in summaries:
            opened += [(a.host, (a.start_ns - T0) // 10**9) for a in stage.on_host_window(summary).alerts
                       if a.state == "open"]
    assert opened == [("h1", 10), ("h0", 70)]


def test_a_new_symptom_on_a_host_whose_incident_has_lasted_a_minute_opens_its_own():
    """A write's page cache keeps a memory incident open for minutes; an allocation that faults pages in later is a
    new incident, not an update of the old one."""
    windows = []
    for window_id in range(200):
        departing = {"mem.dirty": 3.0} if window_id >= 10 else {}
        if 150 <= window_id < 170:
            departing["mem.anon"] = 30.0
        windows.append(_host_window(window_id, departing))
    opened = _opened(windows)
    assert [((a.start_ns - T0) // 10**9, a.subsystem) for a in opened] == [(10, "memory"), (150, "memory")]
    assert "mem.anon" in opened[1].summary


def test_an_incident_whose_cpu_time_moves_with_memory_is_named_memory():
    """Reclaim under memory pressure: system time lies further out than the memory it reclaims, from the first
    window."""
    windows = [_host_window(w, {"cpu.iowait": 12.0, "mem.dirty": 3.0} if 10 <= w < 30 else {}) for w in range(60)]
    [opened] = _opened(windows)
    assert opened.subsystem == "memory" and "cpu.iowait" in opened.summary


def test_a_quiet_incident_takes_back_its_own_channels_but_not_a_new_faults():
    """A burner's CPU incident is quiet (held open in case its busy time returns) when a write burst fills the disk
    and raises I/O wait in the same window: one storage incident, not the old CPU one resumed beside it."""
    windows = []
    for window_id in range(220):
        departing = {"cpu.busy": 20.0} if 10 <= window_id < 30 else {}
        if 110 <= window_id < 130:
            departing.update({"disk.busy": 50.0, "cpu.iowait": 12.0})
        windows.append(_host_window(window_id, departing))
    opened = _opened(windows)
    assert [((a.start_ns - T0) // 10**9, a.subsystem) for a in opened] == [(10, "cpu"), (110, "storage")]
    resumed = [_host_window(w, {"cpu.busy": 20.0} if 10 <= w < 30 or 110 <= w < 130 else {}) for w in range(220)]
    assert [((a.start_ns - T0) // 10**9) for a in _opened(resumed)] == [10]


def test_a_departure_that_lasts_is_kept_once_for_all_its_windows():
    """The departing channels kept for late summaries and onsets are one set while they stay the same: a departure
    lasting the 600 kept windows costs a cluster one set per host, not 600."""
    stage = cluster_stage()
    for window_id in range(40):
        for host in ("h0", "h1", "h2"):
            departing = {"cpu.busy": 3.0} if host == "h0" and window_id >= 10 else {}
            if host == "h0" and window_id >= 25:
                departing["net.tx_bytes"] = 2.0
            stage.on_host_window(_window(host, window_id, departing, ()))
    stage.flush()
    kept = stage._departing["c"]
    sets = {id(kept[w]["h0"]) for w in range(10, 25) if "h0" in kept.get(w, {})}
    later = {id(kept[w]["h0"]) for w in range(25, 40) if "h0" in kept.get(w, {})}
    assert len(sets) == 1 and len(later) == 1 and sets != later
    assert kept[30]["h0"] == frozenset({"cpu.busy", "net.tx_bytes"}) and kept[12]["h0"] == frozenset({"cpu.busy"})


def test_a_shell_of_one_host_tells_its_first_judged_windows_as_they_come():
    """A restored baseline judges its first window at once; a cluster of many waits for its hosts to report, a shell
    of one (the embedded run) has none to wait for."""
    findings = [_host_window(w, {"disk.busy": 9.0}) for w in range(600, 640)]
    for one_host, told_at in ((True, 600), (False, 630)):
        stage = ClusterStage(EngineSettings(), one_host=one_host)
        told = [(summary.window_id, a.state) for summary in findings for a in stage.on_host_window(summary).alerts]
        assert told[0] == (told_at, "open"), (one_host, told)
        assert [state for _, state in told] == ["open"], "opened once, as it came, not opened and updated at once"


def test_an_incident_is_named_after_the_channels_it_tells_of_not_one_its_peers_share():
    """The host's traffic left its band with its peer's (the job's); its memory counters alone are its own: the
    incident that tells of them is memory's, never network's."""
    names = ("net.rx_bytes.eth0", "vm.numa_hit", "vm.numa_local")
    subsystems = ("network", "memory", "memory")

    def summary(host: str, window_id: int, persisted: tuple[int, ...]) -> HostWindow:
        departures = np.array([40.0 if i in persisted else 0.0 for i in range(3)])
        return HostWindow(host, "c", window_id, T0 + window_id * 10**9, T0 + (window_id + 3) * 10**9, 1, names,
                          np.zeros(3), bool(persisted), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, departures,
                          tuple(PersistedChannel(i, -89.9 if i else 30.0, subsystems[i], "residual" if i else "mean",
                                                 40.0) for i in persisted))
    stage, opened = cluster_stage(), []
    for window_id in range(80):
        out = 40 <= window_id < 50
        for host, persisted in (("h0", (0, 1, 2)), ("h1", (0,))):
            alerts = stage.on_host_window(summary(host, window_id, persisted if out else ())).alerts
            opened += [a for a in alerts if a.state == "open" and a.kind == "anomaly"]
    assert [(a.host, a.subsystem) for a in opened] == [("h0", "memory")], opened
    assert "vm.numa_hit residual z=-89.9" in opened[0].summary


def test_the_paper_s_mode_flags_open_incidents_as_the_watch_s_do():
    """§5 compares the trio's flagged windows with what happened: in the paper's mode they open the incidents."""
    host_stage, stage, alerts = HostStage(EngineSettings(mode="paper", warmup_s=40)), cluster_stage(), []
    streams = []
    for index in range(2):
        catalog = synthetic_catalog(f"h{index}", cluster="train-a")
        host_stage.on_catalog(catalog)
        steps = (StepChange("cpu.busy.cpu3", 70.0, 30.0),) if index == 1 else ()
        streams.append(synthetic_frames(catalog, T0, 1000, seed=index, steps=steps))
    for step in range(1000):
        for stream in streams:
            for summary in host_stage.on_frame(stream[step]).host_windows:
                alerts += stage.on_host_window(summary).alerts
    at_step = {a.alert_id for a in alerts if a.state == "open" and a.host == "h1" and 67 <= (a.start_ns - T0) / 1e9
               and (a.end_ns - T0) / 1e9 <= 76}
    assert at_step, alerts
    told = [a for a in alerts if a.alert_id in at_step]
    assert told[-1].subsystem == "cpu" and "cpu.busy.cpu3" in told[-1].summary, told
