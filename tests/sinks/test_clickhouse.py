"""The writer against real ClickHouse: embedded (chDB), one data path per process and one database per test; and the
http(s):// path against a real server (tables created, an embedded run's output stored, every retrospective
answered), run where REVEAL_TEST_CLICKHOUSE_URL names one (e.g. http://reveal:pw@host:8123); elsewhere the conftest
leaves that test out of the run (no server installs from the registries CI reaches)."""

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.records import Alert, Anomaly
from sinks import retrospectives
from sinks.clickhouse import ClickHouseReader, ClickHouseWriter, StorageError, connect, describe_dsn
from sinks.landing import queue_output
from sinks.rows import alert_row, anomaly_row, catalog_row, frame_row
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000
SERVER = os.environ.get("REVEAL_TEST_CLICKHOUSE_URL", "")


def test_every_table_is_created_and_rows_read_back(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    catalog = synthetic_catalog("store-host")
    frames = synthetic_frames(catalog, T0, 200)
    stage = HostStage(EngineSettings(warmup_s=10))
    writer.add("catalogs", [catalog_row(catalog)])
    queue_output(writer, stage.on_catalog(catalog))
    for frame in frames:
        writer.add("frames", [frame_row(frame)])
        queue_output(writer, stage.on_frame(frame))
    writer.add("alerts", [alert_row(Alert("a1", "store-host", "synthetic", "open", T0, T0 + 10**9, 0.5, "cpu", "x"))])
    assert writer.flush() > 200
    counts = dict(writer.query(f"SELECT 'frames', count() FROM {database}.frames UNION ALL "
                               f"SELECT 'windows', count() FROM {database}.windows UNION ALL "
                               f"SELECT 'alerts', count() FROM {database}.alerts")[1])
    assert counts == {"frames": 200, "windows": writer.stats.rows["windows"], "alerts": 1}
    columns, rows = writer.query(f"SELECT values[1], sequence FROM {database}.frames WHERE host = {{h:String}} "
                                 f"ORDER BY sequence LIMIT 1", {"h": "store-host"})
    assert rows[0] == (frames[0].values[0], 0)
    names = writer.query(f"SELECT names FROM {database}.catalogs")[1][0][0]
    assert tuple(names) == catalog.names


def test_a_host_peer_and_retransmission_finding_of_one_host_window_are_all_kept(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    findings = [Anomaly("h1", "c", 42, T0, T0 + 3 * 10**9, detectors, 9.0, 1.0, subsystem, claim, ())
                for detectors, subsystem, claim in ((("zscore", "mahalanobis"), "cpu", "host"),
                                                    (("peer",), "memory", "peer"),
                                                    (("retransmissions",), "network", "retransmissions"))]
    writer.add("anomalies", [anomaly_row(finding) for finding in findings])
    writer.add("anomalies", [anomaly_row(findings[1])])
    writer.flush()
    _, rows = writer.query(f"SELECT claim FROM {database}.anomalies FINAL ORDER BY claim")
    assert [row[0] for row in rows] == ["host", "peer", "retransmissions"]


def test_an_embedded_clickhouse_reports_the_memory_it_tracks_in_this_process(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    writer.add("frames", [["h", "c", 0, 1, 1, [1.0] * 700]])
    writer.flush()
    assert writer.embedded and writer.embedded_memory_bytes() > 0


def test_parameters_are_bound_not_formatted(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    hostile = "x' OR 1=1 --"
    assert writer.query(f"SELECT count() FROM {database}.frames WHERE host = {{h:String}}", {"h": hostile})[1] == [(0,)]


def test_bad_dsn_and_database_names_are_rejected_clearly(chdb_dsn):
    with pytest.raises(StorageError, match="scheme 'mysql' is not one of chdb, http, https"):
        connect("mysql://localhost")
    with pytest.raises(StorageError, match="plain identifier"):
        ClickHouseWriter(chdb_dsn, "reveal; DROP TABLE x")


def test_unreachable_server_names_the_target_without_password():
    with pytest.raises(StorageError, match=r"http://reveal:\*\*\*@127.0.0.1:1"):
        ClickHouseWriter("http://reveal:secret@127.0.0.1:1")


def test_describe_dsn_hides_passwords():
    assert describe_dsn("https://u:hunter2@ch:8443/db") == "https://u:***@ch:8443/db"


def test_writer_reports_full_at_its_bound_and_keeps_every_unwritten_table_when_an_insert_fails(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database, max_pending_rows=3)
    writer.add("frames", [["h", "c", 0, 1, 1, [1.0]], ["h", "c", 0, 2, 1, [1.0]]])
    assert not writer.is_full()
    writer.add("alerts", [["not", "an", "alert"]])
    assert writer.is_full()
    writer.add("baselines", [["h", 1, 0, 10, "{}"]])
    with pytest.raises(StorageError, match="into alerts"):
        writer.flush()
    assert writer.pending_rows() == 2 and writer.stats.rows["frames"] == 2, "tables after the failed one are kept"


def test_frames_are_stored_exactly_as_sent(chdb_dsn, database):
    """Frames go in as RowBinary: names, timestamps, sequences and every value (NaN included) come back unchanged."""
    import math

    import numpy as np

    from schemas.records import Frame

    writer = ClickHouseWriter(chdb_dsn, database)
    values = np.random.default_rng(4).normal(size=300) * 1e6
    values[[0, 150]] = np.nan
    frames = [Frame("höst-ü", "c" * 200, T0 + 123_456_789, 2 ** 63 + 5, 2 ** 32 - 1, values),
              Frame("plain", "", 1, 0, 0, np.empty(0)),
              Frame("list", "c", 2, 1, 7, [1.5, -0.0])]
    writer.add("frames", [frame_row(frame) for frame in frames[:2]] + [["list", "c", 2, 1, 7, [1.5, -0.0]]])
    writer.flush()
    _, rows = writer.query(f"SELECT host, cluster, toUnixTimestamp64Nano(ts), sequence, catalog_version, values "
                           f"FROM {database}.frames ORDER BY host")
    stored = {row[0]: row for row in rows}
    for frame in frames:
        host, cluster, ts, sequence, version, stored_values = stored[frame.host]
        assert (cluster, ts, sequence, version) == (frame.cluster, frame.timestamp_ns, frame.sequence,
                                                    frame.catalog_version)
        assert len(stored_values) == len(frame.values)
        assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(stored_values, frame.values))


@pytest.fixture(scope="module")
def server_database():
    from tests.conftest import store_recorded_run

    database = f"reveal_test_{uuid.uuid4().hex[:8]}"
    writer = ClickHouseWriter(SERVER, database, max_pending_rows=10**7)
    store_recorded_run(writer)
    yield database
    writer.command(f"DROP DATABASE IF EXISTS {database}")
    writer.close()


@pytest.mark.clickhouse_server
def test_a_server_stores_an_embedded_run_and_answers_every_retrospective(server_database):
    reader = ClickHouseReader(SERVER, server_database)
    try:
        _, counts = reader.query("SELECT (SELECT count() FROM frames), (SELECT count() FROM windows), "
                                 "(SELECT count() FROM alerts)")
        assert all(count > 0 for count in counts[0])
        for name, retrospective in retrospectives.retrospectives().items():
            given = {"host": "h1", "channel": "cpu.user.all"}
            needed = {p.name for p in retrospective.parameters if p.default is None}
            reader.query(retrospective.sql, retrospective.bound({k: v for k, v in given.items() if k in needed}))
    finally:
        reader.close()


def test_retired_parts_are_removed_within_seconds_not_in_one_burst_minutes_later(chdb_dsn, database):
    """Each flush stores a part and merges retire them; their files go within seconds, a few at a time, also in a
    table made before the writer set its cleanup (ClickHouse's own cleanup waits up to 300 s and then removes
    hundreds at once on a pool of new threads, a load the watched host would see)."""
    import time

    from sinks.tables import create_statements

    writer = ClickHouseWriter(chdb_dsn, database)
    writer.command(f"DROP TABLE {database}.windows")
    writer.command(next(s for s in create_statements(database) if f"{database}.windows" in s.split("(")[0]))
    writer.close()
    writer = ClickHouseWriter(chdb_dsn, database)
    catalog = synthetic_catalog("parts-host")
    for batch in range(40):
        writer.add("frames", [frame_row(frame) for frame in synthetic_frames(catalog, T0 + batch * 10**9, 5)])
        writer.flush()
    writer.command(f"OPTIMIZE TABLE {database}.frames FINAL")
    deadline = time.monotonic() + 15
    retired = -1
    while time.monotonic() < deadline and retired != 0:
        time.sleep(0.5)
        retired = writer.query(f"SELECT count() FROM system.parts WHERE database = '{database}' "
                               "AND table = 'frames' AND NOT active")[1][0][0]
    assert retired == 0
    settings = writer.query("SELECT create_table_query FROM system.tables WHERE database = {d:String} "
                            "AND name = 'windows'", {"d": database})[1][0][0]
    assert "max_cleanup_delay_period = 5" in settings


def test_frames_merge_in_small_blocks_also_in_a_table_made_before_the_setting(chdb_dsn, database):
    """A frame is a wide array, so the frames table merges in 1,024-row blocks of at most 1 MB granules, rarely
    (merge_selector_base 20) and into ZSTD(1); a frames table made without them gets the merge settings and the
    codec (its granules stay as they were made)."""
    def frames_settings(writer: ClickHouseWriter) -> str:
        return writer.query("SELECT create_table_query FROM system.tables WHERE database = {d:String} "
                            "AND name = 'frames'", {"d": database})[1][0][0]

    merged_rarely = ("merge_max_block_size = 1024", "merge_selector_base = 20",
                     "`values` Array(Float64) CODEC(ZSTD(1))")
    writer = ClickHouseWriter(chdb_dsn, database)
    fresh = frames_settings(writer)
    assert "index_granularity_bytes = 1048576" in fresh and all(part in fresh for part in merged_rarely)
    writer.command(f"DROP TABLE {database}.frames")
    writer.command(f"CREATE TABLE {database}.frames (host String, ts DateTime64(9), sequence UInt64, "
                   "values Array(Float64) CODEC(ZSTD(3))) ENGINE = ReplacingMergeTree ORDER BY (host, ts, sequence)")
    assert not any(part in frames_settings(writer) for part in merged_rarely)
    writer.close()
    writer = ClickHouseWriter(chdb_dsn, database)
    try:
        assert all(part in frames_settings(writer) for part in merged_rarely)
    finally:
        writer.close()


def test_a_merge_setting_this_clickhouse_does_not_know_is_left_out(chdb_dsn, database, monkeypatch):
    """A setting newer than the server (RECENT_SETTINGS) is applied only where system.merge_tree_settings has it, so
    an older ClickHouse still takes Reveal's tables."""
    import sinks.clickhouse as clickhouse

    monkeypatch.setitem(clickhouse.RECENT_SETTINGS, "frames", {"merge_selector_base": 20,
                                                               "a_setting_no_clickhouse_has": 1})
    writer = ClickHouseWriter(chdb_dsn, database)
    try:
        settings = writer.query("SELECT create_table_query FROM system.tables WHERE database = {d:String} "
                                "AND name = 'frames'", {"d": database})[1][0][0]
        assert "merge_selector_base = 20" in settings and "a_setting_no_clickhouse_has" not in settings
    finally:
        writer.close()


def test_storing_every_table_leaves_pandas_unloaded_in_a_process_that_never_loaded_it(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        from producers.synthetic import synthetic_catalog, synthetic_frames
        from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
        from sinks.landing import queue_output
        from sinks.rows import catalog_row, frame_row
        from stream_jobs.engine.settings import EngineSettings
        from stream_jobs.host_stage import HostStage
        writer = ClickHouseWriter(data_dir_dsn({str(tmp_path)!r}))
        catalog = synthetic_catalog("lean-host")
        stage = HostStage(EngineSettings(warmup_s=10))
        writer.add("catalogs", [catalog_row(catalog)])
        queue_output(writer, stage.on_catalog(catalog))
        for frame in synthetic_frames(catalog, {T0}, 200):
            writer.add("frames", [frame_row(frame)])
            queue_output(writer, stage.on_frame(frame))
        stored = writer.flush()
        print(stored, writer.stats.rows["windows"], "pandas" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    stored, windows, pandas_loaded = result.stdout.split()
    assert int(stored) > 201 and int(windows) > 0
    assert pandas_loaded == "False"
