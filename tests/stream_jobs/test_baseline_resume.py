"""A host stage started again over real embedded ClickHouse (chDB) resumes the baseline its predecessor stored, or
says once, in one line, why it learns again: no baseline stored, the catalog changed (which channels), or the
settings it was learned with."""

import logging

import pytest

from producers.synthetic import synthetic_catalog, synthetic_frames
from sinks.clickhouse import ClickHouseWriter
from sinks.landing import ClickHouseLanding
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000
SETTINGS = EngineSettings(warmup_s=30)
NOT_RESUMED = "baseline not resumed: "


@pytest.fixture
def landing(chdb_dsn, database):
    """A landing holding the baseline a first run learned on `restart-host`'s synthetic catalog."""
    landing = ClickHouseLanding(ClickHouseWriter(chdb_dsn, database))
    catalog = synthetic_catalog("restart-host")
    first = HostStage(SETTINGS, landing.saved_baseline)
    landing.store_output(first.on_catalog(catalog))
    for frame in synthetic_frames(catalog, T0, 450):
        landing.store_output(first.on_frame(frame))
    landing.flush()
    yield landing
    landing.close()


def _restart(landing, catalog, caplog, settings=SETTINGS) -> tuple[HostStage, list[str]]:
    """A second stage over the landing's baselines, fed a minute of the catalog's frames; its console lines."""
    caplog.clear()
    stage = HostStage(settings, landing.saved_baseline, "/var/lib/reveal")
    with caplog.at_level(logging.INFO, logger="stream_jobs.host_stage"):
        stage.on_catalog(catalog)
        for frame in synthetic_frames(catalog, T0 + 60 * 10**9, 600):
            stage.on_frame(frame)
    return stage, [record.getMessage() for record in caplog.records]


def test_the_same_catalog_resumes_its_baseline_without_a_word_of_learning_again(landing, caplog):
    stage, lines = _restart(landing, synthetic_catalog("restart-host"), caplog)
    assert stage.counters.baselines_restored == 1
    assert not [line for line in lines if NOT_RESUMED in line]


def test_a_catalog_that_gained_and_lost_channels_says_which_once(landing, caplog):
    stage, lines = _restart(landing, synthetic_catalog("restart-host", gauges=10, counters=3), caplog)
    told = [line for line in lines if NOT_RESUMED in line]
    assert stage.counters.baselines_restored == 0
    assert told == ["restart-host: baseline not resumed: the catalog changed (2 channels added: cpu.busy.cpu8, "
                    "cpu.busy.cpu9; 1 channel removed: net.rx_bytes.eth3); learning it again"]


def test_other_window_settings_are_named_with_both_values(landing, caplog):
    settings = EngineSettings(warmup_s=30, window_s=2.0)
    stage, lines = _restart(landing, synthetic_catalog("restart-host"), caplog, settings)
    told = [line for line in lines if NOT_RESUMED in line]
    assert stage.counters.baselines_restored == 0
    assert told == ["restart-host: baseline not resumed: it was learned with window_s 3.0, now 2.0; learning it again"]


def test_a_host_without_a_stored_baseline_says_where_none_was_found(landing, caplog):
    _, lines = _restart(landing, synthetic_catalog("new-host"), caplog)
    assert [line for line in lines if NOT_RESUMED in line] == [
        "new-host: baseline not resumed: no baseline of this host is stored in /var/lib/reveal; learning it again"]
