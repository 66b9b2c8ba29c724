"""The report's queries over Reveal's ClickHouse tables, each returning plain records.

Every value, the database and table names included, is a bound parameter. Long series are bucketed in ClickHouse,
so a day of 10 Hz frames or 1 s windows arrives as at most a few hundred points per line.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.records import Alert
from reveal.report.series import counter_rates, is_cumulative
from sinks.rows import alert_from_columns
from sinks.tables import ALERTS

IN_SCOPE = ("(empty({hosts:Array(String)}) OR has({hosts:Array(String)}, host)) "
            "AND toUnixTimestamp64Nano({time:Identifier}) >= {since:Int64}")

COUNT_SQL = f"SELECT count() FROM {{db:Identifier}}.{{table:Identifier}} WHERE {IN_SCOPE}"
ANOMALOUS_COUNT_SQL = f"SELECT countIf(anomalous) FROM {{db:Identifier}}.windows WHERE {IN_SCOPE}"
HOSTS_SQL = (f"SELECT DISTINCT host FROM {{db:Identifier}}.{{table:Identifier}} WHERE {IN_SCOPE}")
SPAN_SQL = (f"SELECT min(toUnixTimestamp64Nano({{start:Identifier}})), max(toUnixTimestamp64Nano({{time:Identifier}})),"
            f" count() FROM {{db:Identifier}}.{{table:Identifier}} WHERE {IN_SCOPE}")
DETECTOR_SQL = f"""
SELECT host, detector, max(toUnixTimestamp64Nano(end)) AS at_ns, max(detector_score), avg(detector_threshold),
       max(detector_flagged)
FROM {{db:Identifier}}.windows
ARRAY JOIN detector_names AS detector, detector_scores AS detector_score, detector_thresholds AS detector_threshold,
           arrayMap(name -> has(flagged_by, name), detector_names) AS detector_flagged
WHERE baseline_ready AND {IN_SCOPE}
GROUP BY host, detector, intDiv(toUnixTimestamp64Nano(end) - {{origin:Int64}}, {{bucket:Int64}}) AS slot
ORDER BY host, detector, slot"""
SEVERITY_SQL = f"""
SELECT host, 'severity', max(toUnixTimestamp64Nano(end)) AS at_ns, max(score), avg(threshold), max(anomalous)
FROM {{db:Identifier}}.windows
WHERE baseline_ready AND {IN_SCOPE}
GROUP BY host, intDiv(toUnixTimestamp64Nano(end) - {{origin:Int64}}, {{bucket:Int64}}) AS slot
ORDER BY host, slot"""
ANOMALOUS_SQL = f"""
SELECT host, min(toUnixTimestamp64Nano(start)), max(toUnixTimestamp64Nano(end))
FROM {{db:Identifier}}.windows
WHERE anomalous AND {IN_SCOPE}
GROUP BY host, intDiv(toUnixTimestamp64Nano(end) - {{origin:Int64}}, {{bucket:Int64}}) AS slot
ORDER BY host, slot"""
CAUSES_SQL = f"""
SELECT host, min(toUnixTimestamp64Nano(start)), max(toUnixTimestamp64Nano(end)), groupUniqArray(subsystem),
       groupUniqArrayArray(evidence_channel), uniqExact(window_id)
FROM {{db:Identifier}}.anomalies
WHERE {IN_SCOPE}
GROUP BY host, intDiv(toUnixTimestamp64Nano(end) - {{origin:Int64}}, {{bucket:Int64}}) AS slot
ORDER BY host, slot"""
CATALOG_SQL = """
SELECT host, names, subsystems FROM {db:Identifier}.catalogs
WHERE empty({hosts:Array(String)}) OR has({hosts:Array(String)}, host)
ORDER BY host, version, seen_at DESC LIMIT 1 BY host, version"""
IMPLICATED_SQL = f"""
SELECT host, channel, uniqExact(window_id) AS windows, max(abs(z)) AS peak_z
FROM {{db:Identifier}}.anomalies ARRAY JOIN evidence_channel AS channel, evidence_z AS z
WHERE {IN_SCOPE}
GROUP BY host, channel ORDER BY windows DESC, peak_z DESC, host, channel LIMIT {{limit:UInt32}}"""
CHANNEL_INDEX_SQL = """
SELECT version, indexOf(names, {channel:String}) AS position, kinds[position], units[position]
FROM {db:Identifier}.catalogs WHERE host = {host:String}
ORDER BY version, seen_at DESC LIMIT 1 BY version"""
TRACE_SQL = """
SELECT max(toUnixTimestamp64Nano(ts)), avg(values[{position:UInt32}]), argMax(values[{position:UInt32}], ts)
FROM {db:Identifier}.frames
WHERE host = {host:String} AND catalog_version = {version:UInt32} AND toUnixTimestamp64Nano(ts) >= {since:Int64}
GROUP BY intDiv(toUnixTimestamp64Nano(ts) - {origin:Int64}, {bucket:Int64}) AS slot
ORDER BY slot"""
INCIDENTS_SQL = f"""
SELECT {ALERTS.select()}
FROM {{db:Identifier}}.alerts WHERE {IN_SCOPE}
ORDER BY alert_id, end DESC, indexOf(['open', 'update', 'closed'], state) DESC LIMIT 1 BY alert_id"""
FAULTS_SQL = f"""
SELECT run_id, scenario, fault, host, toUnixTimestamp64Nano(start), toUnixTimestamp64Nano(end), subsystem,
       magnitude, description
FROM {{db:Identifier}}.lab_faults WHERE {IN_SCOPE}
ORDER BY start, host, fault"""
SCORES_SQL = """
SELECT run_id, scenario, thresholds, metric, value FROM {db:Identifier}.lab_scores
ORDER BY run_id, metric, thresholds, scored_at DESC LIMIT 1 BY run_id, thresholds, metric"""

TIME_COLUMNS = {"frames": "ts", "windows": "end", "anomalies": "end", "alerts": "end", "retransmissions": "end",
                "lab_faults": "end"}


@dataclass(frozen=True)
class Scope:
    """Which rows a report covers: from `since_ns` on, and only `hosts` when any are named."""

    since_ns: int = 0
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Buckets:
    """Time buckets shared by every bucketed query: their origin and width in ns."""

    origin_ns: int
    width_ns: int


@dataclass(frozen=True)
class ScoreSeries:
    """One detector's (or the ensemble's 'severity') score on one host, bucketed: peak score, mean threshold, and
    whether any window of the bucket was flagged."""

    host: str
    detector: str
    times_ns: tuple[int, ...]
    scores: tuple[float, ...]
    thresholds: tuple[float, ...]
    flagged: tuple[bool, ...]


@dataclass(frozen=True)
class CauseSlot:
    """The anomalies of one host in one time bucket: their interval, subsystems and evidence channels."""

    host: str
    start_ns: int
    end_ns: int
    subsystems: tuple[str, ...]
    channels: tuple[str, ...]
    windows: int


@dataclass(frozen=True)
class Implicated:
    """An evidence channel on a host: in how many anomalous windows it appears, and its largest |z|."""

    host: str
    channel: str
    windows: int
    peak_z: float


@dataclass(frozen=True)
class Trace:
    """A channel's stored values on one host over time; counters are shown as per-second rates."""

    host: str
    channel: str
    unit: str
    is_rate: bool
    times_ns: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class Fault:
    """One injected fault of a lab run (ground truth)."""

    run_id: str
    scenario: str
    fault: str
    host: str
    start_ns: int
    end_ns: int
    subsystem: str
    magnitude: float
    description: str


@dataclass(frozen=True)
class Score:
    """One metric of a lab run under one thresholds mode (e.g. calibrated or paper)."""

    run_id: str
    scenario: str
    thresholds: str
    metric: str
    value: float


class ReportStore:
    """Read-only queries for the report over one database, limited to a scope. `client` is a
    sinks.clickhouse.ClickHouseWriter (or anything with its `query(sql, parameters)`)."""

    def __init__(self, client, database: str, scope: Scope = Scope()):
        self.client, self.database, self.scope = client, database, scope

    def _rows(self, sql: str, **parameters) -> list[tuple]:
        bound = {"db": self.database, "since": self.scope.since_ns, "hosts": list(self.scope.hosts), **parameters}
        return self.client.query(sql, bound)[1]

    def _bucketed(self, sql: str, buckets: Buckets, **parameters) -> list[tuple]:
        return self._rows(sql, origin=buckets.origin_ns, bucket=buckets.width_ns, **parameters)

    def count(self, table: str) -> int:
        return self._rows(COUNT_SQL, table=table, time=TIME_COLUMNS[table])[0][0]

    def anomalous_windows(self) -> int:
        return self._rows(ANOMALOUS_COUNT_SQL, time="end")[0][0]

    def hosts(self) -> tuple[str, ...]:
        """Every host with frames or windows in scope, sorted."""
        found = {row[0] for table in ("windows", "frames") for row in
                 self._rows(HOSTS_SQL, table=table, time=TIME_COLUMNS[table])}
        return tuple(sorted(found))

    def span(self) -> tuple[int, int] | None:
        """First and last instant (ns) of the windows and frames in scope; None when there are neither."""
        ends = [self._rows(SPAN_SQL, table=table, start=start, time=TIME_COLUMNS[table])[0]
                for table, start in (("windows", "start"), ("frames", "ts"))]
        found = [(int(first), int(last)) for first, last, rows in ends if rows]
        return (min(f for f, _ in found), max(last for _, last in found)) if found else None

    def score_series(self, buckets: Buckets) -> list[ScoreSeries]:
        """Each host's detector scores and its ensemble severity, bucketed, after the baseline is learnt."""
        rows = self._bucketed(DETECTOR_SQL, buckets, time="end") + self._bucketed(SEVERITY_SQL, buckets, time="end")
        series: dict[tuple[str, str], list[tuple]] = {}
        for host, detector, *point in rows:
            series.setdefault((host, detector), []).append(point)
        return [ScoreSeries(host, detector, *_columns(points, (int, float, float, bool)))
                for (host, detector), points in series.items()]

    def anomalous_intervals(self, buckets: Buckets) -> dict[str, list[tuple[int, int]]]:
        """Per host, the intervals covered by anomalous windows, one per bucket at most."""
        intervals: dict[str, list[tuple[int, int]]] = {}
        for host, start, end in self._bucketed(ANOMALOUS_SQL, buckets, time="end"):
            intervals.setdefault(host, []).append((int(start), int(end)))
        return intervals

    def cause_slots(self, buckets: Buckets) -> list[CauseSlot]:
        return [CauseSlot(host, int(start), int(end), tuple(sorted(subsystems)), tuple(sorted(channels)), windows)
                for host, start, end, subsystems, channels, windows in
                self._bucketed(CAUSES_SQL, buckets, time="end")]

    def channel_subsystems(self) -> dict[tuple[str, str], str]:
        """(host, channel) → subsystem, from every catalog version in scope."""
        return {(host, name): subsystem for host, names, subsystems in self._rows(CATALOG_SQL)
                for name, subsystem in zip(names, subsystems)}

    def implicated(self, limit: int) -> list[Implicated]:
        """The evidence channels of the most anomalous windows, most often implicated first."""
        return [Implicated(host, channel, windows, float(peak_z))
                for host, channel, windows, peak_z in self._rows(IMPLICATED_SQL, time="end", limit=limit)]

    def trace(self, host: str, channel: str, buckets: Buckets) -> Trace | None:
        """The channel's values on a host over every catalog version that has it; None when no catalog has it."""
        versions = [row for row in self._rows(CHANNEL_INDEX_SQL, host=host, channel=channel) if row[1] > 0]
        if not versions:
            return None
        points = sorted(point for version, position, kind, _ in versions for point in
                        self._version_points(host, version, position, kind, buckets))
        kind, unit = versions[-1][2], versions[-1][3]
        times, values = ([p[0] for p in points], [p[1] for p in points])
        if is_cumulative(kind):
            times, values = counter_rates(times, values)
        return Trace(host, channel, f"{unit}/s" if is_cumulative(kind) else unit, is_cumulative(kind),
                     tuple(times), tuple(values))

    def _version_points(self, host: str, version: int, position: int, kind: str, buckets: Buckets):
        """(time, value) per bucket: the mean of a gauge, the last reading of a counter."""
        rows = self._bucketed(TRACE_SQL, buckets, host=host, version=version, position=position)
        return [(int(at), float(last if is_cumulative(kind) else mean)) for at, mean, last in rows]

    def incidents(self) -> list[Alert]:
        """The latest state of every alert in scope, earliest first."""
        rows = self._rows(INCIDENTS_SQL, time="end")
        return sorted((_incident(dict(zip(ALERTS.columns, row))) for row in rows),
                      key=lambda incident: (incident.start_ns, incident.host))

    def faults(self) -> list[Fault]:
        return [Fault(run_id, scenario, fault, host, int(start), int(end), subsystem, float(magnitude), description)
                for run_id, scenario, fault, host, start, end, subsystem, magnitude, description in
                self._rows(FAULTS_SQL, time="end")]

    def scores(self) -> list[Score]:
        return [Score(run_id, scenario, thresholds, metric, float(value))
                for run_id, scenario, thresholds, metric, value in self._rows(SCORES_SQL)]


def _columns(points: list[tuple], types: tuple) -> list[tuple]:
    """Rows of points → one typed tuple per column."""
    return [tuple(kind(value) for value in column) for column, kind in zip(zip(*points), types)]


def _incident(values: dict) -> Alert:
    """A stored alert read back, its times and severity as numbers whichever client read them."""
    return alert_from_columns({**values, "start": int(values["start"]), "end": int(values["end"]),
                               "severity": float(values["severity"])})
