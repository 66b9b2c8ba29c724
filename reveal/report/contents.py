"""What one report shows, gathered from the store: the records behind each section and which channels to trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from schemas.records import Alert
from reveal.report.data import (Buckets, CauseSlot, Fault, Implicated, ReportStore, Scope, Score,
                                     ScoreSeries, Trace)
from reveal.report.series import bucket_ns

TRACED_CHANNELS = 4
CROSS_HOST_CHANNELS = 3
CROSS_HOST_HOSTS = 8
IMPLICATED_CANDIDATES = 40


@dataclass(frozen=True)
class ChannelTrace:
    """A traced evidence channel: how it was implicated and its values."""

    implicated: Implicated
    trace: Trace


@dataclass(frozen=True)
class CrossHost:
    """One channel on several hosts, for comparison side by side."""

    channel: str
    traces: tuple[Trace, ...]
    hosts_left_out: int = 0


@dataclass
class ReportData:
    """Everything one report draws; built by `gather`, or directly in tests."""

    source: str
    database: str
    scope: Scope = Scope()
    span: tuple[int, int] | None = None
    hosts: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    score_series: list[ScoreSeries] = field(default_factory=list)
    anomalous: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    causes: list[CauseSlot] = field(default_factory=list)
    channel_subsystems: dict[tuple[str, str], str] = field(default_factory=dict)
    traces: list[ChannelTrace] = field(default_factory=list)
    untraced: list[Implicated] = field(default_factory=list)
    cross_host: list[CrossHost] = field(default_factory=list)
    incidents: list[Alert] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    scores: list[Score] = field(default_factory=list)


def gather(store: ReportStore, source: str, progress: Callable[[str], None] = lambda line: None) -> ReportData:
    """Run the report's queries, bucketing every series over the span of the data in scope."""
    data = ReportData(source, store.database, store.scope, store.span(), store.hosts())
    data.counts = _counts(store)
    progress(f"{len(data.hosts)} hosts, " + ", ".join(f"{n:,} {name.replace('_', ' ')}"
                                                      for name, n in data.counts.items()))
    if data.span:
        _gather_series(store, data, Buckets(data.span[0], bucket_ns(*data.span)), progress)
    progress("reading incidents and lab results")
    data.incidents, data.faults, data.scores = store.incidents(), store.faults(), store.scores()
    return data


def _counts(store: ReportStore) -> dict[str, int]:
    """Rows in scope per table, with the anomalous windows right after the windows."""
    return {"frames": store.count("frames"), "windows": store.count("windows"),
            "anomalous_windows": store.anomalous_windows(),
            **{table: store.count(table) for table in ("anomalies", "retransmissions", "lab_faults")}}


def _gather_series(store: ReportStore, data: ReportData, buckets: Buckets, progress) -> None:
    progress(f"reading window scores in buckets of {buckets.width_ns / 1e9:g} s")
    data.score_series = store.score_series(buckets)
    data.anomalous = store.anomalous_intervals(buckets)
    data.causes = store.cause_slots(buckets)
    data.channel_subsystems = store.channel_subsystems()
    implicated = store.implicated(IMPLICATED_CANDIDATES)
    progress(f"reading raw traces of up to {TRACED_CHANNELS} implicated channels")
    data.traces, data.untraced = _channel_traces(store, implicated, buckets)
    progress(f"comparing up to {CROSS_HOST_CHANNELS} channels across hosts")
    data.cross_host = _cross_host(store, data.hosts, data.traces, buckets)


def _channel_traces(store: ReportStore, implicated: list[Implicated], buckets: Buckets):
    """The raw traces of the most implicated channels; channels no catalog names (derived metrics) are listed."""
    traced, untraced = [], []
    for candidate in implicated:
        if len(traced) >= TRACED_CHANNELS:
            break
        trace = store.trace(candidate.host, candidate.channel, buckets)
        if trace is None:
            untraced.append(candidate)
        else:
            traced.append(ChannelTrace(candidate, trace))
    return traced, untraced


def _cross_host(store: ReportStore, hosts: tuple[str, ...], traced: list[ChannelTrace],
                buckets: Buckets) -> list[CrossHost]:
    """The traced channels on every host (implicated host first), when there are peers to compare with."""
    if len(hosts) < 2:
        return []
    comparisons, seen = [], set()
    for item in traced:
        if item.trace.channel in seen or len(comparisons) >= CROSS_HOST_CHANNELS:
            continue
        seen.add(item.trace.channel)
        order = [item.trace.host] + [host for host in hosts if host != item.trace.host]
        shown = order[:CROSS_HOST_HOSTS]
        traces = [item.trace] + [t for t in (store.trace(h, item.trace.channel, buckets) for h in shown[1:]) if t]
        comparisons.append(CrossHost(item.trace.channel, tuple(traces), len(order) - len(shown)))
    return comparisons
