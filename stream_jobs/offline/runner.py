"""Offline detection: a recorded table in, one judged row per host-window out, through the same engine as live.

Without a separate baseline the run is its own baseline, as in the paper: every window of a host is learned first,
then every window is judged against that. With `--baseline`, the detectors learn from that table instead.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable

import numpy as np

from schemas.channels import SUBSYSTEMS
from schemas.records import CHANNEL_KINDS, Catalog, Channel
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.host_pipeline import HostPipeline
from stream_jobs.engine.settings import refit_phase
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.engine.verdicts import WindowVerdict
from stream_jobs.engine.windows import WindowAssembler
from stream_jobs.offline.host_tables import counters_as_rates
from stream_jobs.offline.tables import HostTable, RecordedTable, TableError
from stream_jobs.records import host_window

DETECTORS = ("zscore", "mahalanobis", "isolation_forest")
# A run judged against itself leaves its most unusual fifth out of the baseline, so a fault that lasts less than
# that is not learned as normal.
SELF_BASELINE_TRIM = 0.2


def count_windows(table: HostTable, settings: EngineSettings) -> int:
    """How many windows the table's rows make with these window settings."""
    assembler = WindowAssembler(settings.window_s, settings.stride_s, table.interval_s)
    for timestamp, row in zip(table.timestamps_ns.tolist(), table.values):
        assembler.push(timestamp, row)
    return assembler.counters.emitted


def learned_pipeline(table: HostTable, baseline: HostTable, settings: EngineSettings) -> HostPipeline:
    """A pipeline whose baseline is every window of `baseline`, ready to judge `table`."""
    if 2 * baseline.interval_s > settings.window_s:
        raise TableError(f"{baseline.host}: rows come every {baseline.interval_s:g} s, so a {settings.window_s:g} s "
                         f"window holds fewer than two; give --window of at least {2 * baseline.interval_s:g} s")
    windows = count_windows(baseline, settings)
    if windows < 10:
        raise TableError(f"{baseline.host}: the baseline makes {windows} windows of {settings.window_s:g} s; "
                         f"at least 10 are needed")
    learned = replace(settings, warmup_s=windows * settings.stride_s, interval_s=table.interval_s, explain_all=True)
    pipeline = HostPipeline(table.channels, learned, refit_phase(table.host, settings.refit_every))
    pipeline.push_frames(baseline.timestamps_ns, baseline.values)
    pipeline.restart_windows()
    return pipeline


def judge_host(table: HostTable, baseline: HostTable | None,
               settings: EngineSettings) -> tuple[HostPipeline, list[WindowVerdict]]:
    """Every window of one host, judged against the baseline (or against the run itself)."""
    if baseline is not None and baseline.channels.names != table.channels.names:
        missing = sorted(set(table.channels.names) - set(baseline.channels.names))[:5]
        raise TableError(f"{table.host}: the baseline lacks columns of the input, e.g. {missing}")
    own = replace(settings, baseline_trim=max(settings.baseline_trim, SELF_BASELINE_TRIM)) if baseline is None \
        else settings
    pipeline = learned_pipeline(table, baseline or table, own)
    return pipeline, pipeline.push_frames(table.timestamps_ns, table.values)


def detect(table: RecordedTable, settings: EngineSettings, baseline: RecordedTable | None = None,
           progress: Callable[[str], None] = lambda line: None) -> list[dict]:
    """Output rows for every host-window of the table, with peer deviations across its hosts."""
    table, baseline, counters = counters_as_rates(table, baseline)
    if counters:
        shown = ", ".join(counters[:5]) + (f" and {len(counters) - 5} more" if len(counters) > 5 else "")
        progress(f"{len(counters)} columns only rise, read as raw counters and judged by their rate: {shown}")
    rows, cluster = [], ClusterStage(settings)
    hosts_in = Counter(host_table.cluster for host_table in table.hosts.values())
    for host, host_table in table.hosts.items():
        base = baseline.hosts.get(host) if baseline else None
        if baseline is not None and base is None:
            raise TableError(f"the baseline has no rows for host {host!r} (it has {sorted(baseline.hosts)})")
        progress(f"{host}: {len(host_table.timestamps_ns)} rows, {len(host_table.channels.names)} metrics")
        empty = [name for name, seen in zip(host_table.channels.names, np.isfinite(host_table.values).any(axis=0))
                 if not seen]
        if empty:
            progress(f"{host}: {len(empty)} column{'s hold' if len(empty) > 1 else ' holds'} no number in any row, "
                     "not judged: "
                     + ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else ""))
        catalog = _catalog_for(host_table)
        pipeline, verdicts = judge_host(host_table, base, settings)
        rows += [output_row(host, verdict) for verdict in verdicts]
        if hosts_in[host_table.cluster] > 1:  # a host alone in its cluster has no peers to be compared with
            for verdict in verdicts:
                cluster.on_host_window(host_window(catalog, pipeline, verdict))
    _mark_peer_findings(rows, cluster.flush().anomalies)
    return sorted(rows, key=lambda r: (r["window_start"], r["host"]))


def output_row(host: str, verdict: WindowVerdict) -> dict:
    """One row of `reveal detect`'s output."""
    return {"host": host, "window_start": verdict.start_ns, "window_end": verdict.end_ns,
            **{f"score_{name}": verdict.detector_scores.get(name, float("nan")) for name in DETECTORS},
            "score": verdict.score, "flagged": int(verdict.anomalous), "detectors": list(verdict.detectors),
            "subsystem": verdict.subsystem, "claim": verdict.claim,
            "ranked_metrics": list(verdict.ranked_channels or dict.fromkeys(c.channel for c in verdict.evidence))}


def _mark_peer_findings(rows: list[dict], peer_anomalies) -> None:
    """A host-window that deviates from its peers is flagged, with 'peer' among its detectors."""
    by_key = {(r["host"], r["window_end"]): r for r in rows}
    for anomaly in peer_anomalies:
        row = by_key.get((anomaly.host, anomaly.window_end_ns))
        if row is None:
            continue
        row["flagged"] = 1
        row["detectors"] = list(row["detectors"]) + [d for d in anomaly.detectors if d not in row["detectors"]]
        row["claim"] = row["claim"] or anomaly.claim
        row["subsystem"] = row["subsystem"] or anomaly.subsystem


def _catalog_for(table: HostTable) -> Catalog:
    channels = tuple(Channel(n, s if s in SUBSYSTEMS else "cpu", k if k in CHANNEL_KINDS else "gauge")
                     for n, k, s in zip(table.channels.names, table.channels.kinds, table.channels.subsystems))
    return Catalog(table.host, table.cluster, channels, table.interval_s)
