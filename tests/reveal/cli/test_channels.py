"""`reveal channels`: this host's channels, and the stored catalogs (latest version per host)."""

import subprocess
import sys
from pathlib import Path

from schemas.records import Catalog, Channel
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from sinks.landing import queue_catalog
from tests.own_process import in_own_process



def reveal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True, timeout=120)


def test_this_hosts_channels_are_listed_with_subsystem_kind_unit_and_device():
    result = reveal("channels", "--format", "tsv", "--host", "listed-host", "--sources", "network")
    assert result.returncode == 0, result.stderr[-2000:]
    header, *rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert header == ["host", "name", "subsystem", "kind", "unit", "device"]
    assert len(rows) > 10 and {row[0] for row in rows} == {"listed-host"}
    assert {row[2] for row in rows} >= {"network"} and all(row[3] for row in rows)


def store_catalogs(folder: Path) -> None:
    writer = ClickHouseWriter(data_dir_dsn(folder))
    for version, names in ((1, ("a.old",)), (2, ("a.new", "b.new"))):
        queue_catalog(writer, Catalog("h1", "c", tuple(Channel(n, "cpu", "gauge", "pct", "cpu0") for n in names),
                                      version=version))
    queue_catalog(writer, Catalog("h2", "c", (Channel("disk.reads", "storage", "counter", "ops", "vda"),), version=5))
    writer.close()


def test_stored_catalogs_are_listed_latest_version_per_host(tmp_path):
    in_own_process(store_catalogs, tmp_path / "data")
    listed = reveal("channels", "--data-dir", str(tmp_path / "data"), "--format", "tsv")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1:] == ["h1\ta.new\tcpu\tgauge\tpct\tcpu0", "h1\tb.new\tcpu\tgauge\tpct\tcpu0",
                                              "h2\tdisk.reads\tstorage\tcounter\tops\tvda"]
    one = reveal("channels", "--data-dir", str(tmp_path / "data"), "--host", "h2", "--format", "tsv")
    assert one.stdout.splitlines()[1:] == ["h2\tdisk.reads\tstorage\tcounter\tops\tvda"]
