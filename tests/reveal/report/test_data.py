"""The report's queries over real pipeline output in chDB: counts, hosts and traces read back (counters as rates),
and a scope that limits every query to its hosts and time."""

from __future__ import annotations

from reveal.report.contents import gather
from reveal.report.data import Buckets, ReportStore, Scope
from reveal.report.page import render_report
from sinks.clickhouse import ClickHouseWriter
from tests.reveal.report.stored_run import FRAMES_PER_HOST, STEPS, T0, section


def test_scope_limits_hosts_and_time(chdb_dsn, run_database):
    since = T0 + 90 * 10**9
    store = ReportStore(ClickHouseWriter(chdb_dsn, run_database), run_database, Scope(since, ("alpha",)))
    data = gather(store, chdb_dsn)
    assert data.hosts == ("alpha",) and data.span[0] >= since - 3 * 10**9
    assert {series.host for series in data.score_series} == {"alpha"}
    assert all(incident.host == "alpha" for incident in data.incidents)
    assert section(render_report(data), "cross-host").count("<svg") == 0


def test_counts_hosts_and_traces_read_back_with_counters_as_rates(chdb_dsn, run_database):
    store = ReportStore(ClickHouseWriter(chdb_dsn, run_database), run_database)
    assert store.count("frames") == 3 * FRAMES_PER_HOST and store.hosts() == tuple(sorted(STEPS))
    first, last = store.span()
    buckets = Buckets(first, (last - first) // 50 + 1)
    counter = store.trace("alpha", "net.rx_bytes.eth0", buckets)
    gauge = store.trace("alpha", "cpu.busy.cpu1", buckets)
    assert counter.is_rate and counter.unit == "bytes/s" and not gauge.is_rate and gauge.unit == "percent"
    assert 40 <= len(gauge.values) <= 51 and list(gauge.times_ns) == sorted(gauge.times_ns)
    assert store.trace("alpha", "no.such.channel", buckets) is None
