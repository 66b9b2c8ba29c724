"""The stages' output landing in real embedded ClickHouse (chDB) through ClickHouseLanding: catalogs, frames and a
stage's windows, alerts and baselines queued and written, a restarted worker's latest baseline found again (of its
catalog, else of another, to say why it is not resumed), and the queue bounded."""

import json

from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.records import Alert
from sinks.clickhouse import ClickHouseWriter
from sinks.landing import ClickHouseLanding, open_landing
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage
from stream_jobs.records import StageOutput

T0 = 1_700_000_000_000_000_000


def test_a_hosts_catalog_frames_and_stage_output_land_in_their_tables(chdb_dsn, database):
    landing = ClickHouseLanding(ClickHouseWriter(chdb_dsn, database))
    catalog = synthetic_catalog("land-host")
    stage = HostStage(EngineSettings(warmup_s=10))
    landing.store_catalog(catalog)
    landing.store_output(stage.on_catalog(catalog))
    for frame in synthetic_frames(catalog, T0, 100):
        landing.store_frame(frame)
        landing.store_output(stage.on_frame(frame))
    landing.store_output(StageOutput(alerts=[Alert("land-host:1", "land-host", "synthetic", "open", T0, T0 + 10**9,
                                                   0.5, "cpu", "cpu rose")]))
    waiting = landing.pending_rows()
    assert landing.flush() == waiting and landing.pending_rows() == 0
    written = landing.rows_written
    assert (written["catalogs"], written["frames"], written["alerts"]) == (1, 100, 1) and written["windows"] > 0
    landing.close()


def test_the_latest_baseline_saved_for_a_host_and_catalog_is_found_again_else_its_latest_of_another(chdb_dsn,
                                                                                                   database):
    landing = ClickHouseLanding(ClickHouseWriter(chdb_dsn, database))
    landing.store_output(StageOutput(baseline_rows=[["h1", 7, 1_000, 30, json.dumps({"windows": 30})],
                                                    ["h1", 7, 4_000, 60, json.dumps({"windows": 60})],
                                                    ["h1", 8, 3_000, 90, json.dumps({"windows": 90})]]))
    landing.flush()
    assert landing.saved_baseline("h1", 7) == {"windows": 60, "catalog_version": 7}
    assert landing.saved_baseline("h1", 8) == {"windows": 90, "catalog_version": 8}
    assert landing.saved_baseline("h1", 9) == {"windows": 60, "catalog_version": 7}
    assert landing.saved_baseline("h2", 7) is None
    landing.close()


def test_an_opened_landing_is_full_at_its_bound_until_it_is_written(chdb_dsn, database):
    landing = open_landing(chdb_dsn, database, max_pending_rows=2)
    catalog = synthetic_catalog("bound-host")
    frames = synthetic_frames(catalog, T0, 2)
    landing.store_frame(frames[0])
    assert landing.max_pending_rows == 2 and not landing.is_full()
    landing.store_frame(frames[1])
    assert landing.is_full()
    landing.flush()
    assert not landing.is_full() and landing.rows_written["frames"] == 2
    landing.close()
