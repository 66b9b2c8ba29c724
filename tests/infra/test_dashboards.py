"""Every Grafana panel's query runs and answers: ClickHouse panels against a database filled by an embedded run,
Prometheus panels against the metric names the agent and the worker serve."""

import json
import re
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sinks.clickhouse import ClickHouseReader

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "infra" / "grafana"
DASHBOARDS = {path.stem: json.loads(path.read_text()) for path in sorted((GRAFANA / "dashboards").glob("*.json"))}
CLICKHOUSE, PROMETHEUS = "grafana-clickhouse-datasource", "prometheus"
ALL_TIME = ("toDateTime64('1970-01-01 00:00:00', 3)", "toDateTime64('2100-01-01 00:00:00', 3)")


def as_clickhouse(sql: str, variables: dict[str, str]) -> str:
    """The query as the Grafana ClickHouse plugin sends it: its macros expanded (the whole time range), its
    variables replaced."""
    sql = re.sub(r"\$__timeFilter\((\w+)\)", rf"\1 >= {ALL_TIME[0]} AND \1 <= {ALL_TIME[1]}", sql)
    sql = re.sub(r"\$__timeInterval\((\w+)\)", r"toStartOfInterval(\1, INTERVAL 60 SECOND)", sql)
    for name, value in variables.items():
        sql = sql.replace(f"${{{name}}}", value)
    assert "$" not in sql, f"a macro or variable is left in {sql}"
    return sql


def panels(source: str):
    for name, dashboard in DASHBOARDS.items():
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                if target["datasource"]["type"] == source:
                    yield pytest.param(name, panel, target, id=f"{name}: {panel['title']}")


@pytest.fixture(scope="module")
def reader(chdb_dsn, recorded_run):
    reader = ClickHouseReader(chdb_dsn, recorded_run)
    yield reader
    reader.close()


def variable_values(reader, dashboard: dict) -> dict[str, str]:
    """Each template variable set to the first value its own query offers (a variable may use the ones before)."""
    values = {}
    for variable in dashboard["templating"]["list"]:
        _, rows = reader.query(as_clickhouse(variable["query"], values))
        assert rows, f"variable {variable['name']} offers no value"
        values[variable["name"]] = rows[0][0]
    return values


def test_there_are_fleet_host_cluster_and_health_dashboards():
    assert set(DASHBOARDS) == {"reveal-fleet", "reveal-host", "reveal-cluster", "reveal-health"}
    for name, dashboard in DASHBOARDS.items():
        assert dashboard["uid"] == name and dashboard["panels"], name
        ids = [panel["id"] for panel in dashboard["panels"]]
        assert len(ids) == len(set(ids)), name


@pytest.mark.parametrize("name, panel, target", list(panels(CLICKHOUSE)))
def test_each_clickhouse_panel_answers_on_an_embedded_run(reader, name, panel, target):
    sql = as_clickhouse(target["rawSql"], variable_values(reader, DASHBOARDS[name]))
    columns, rows = reader.query(sql)
    assert rows, f"{panel['title']} returned nothing"
    if target["format"] == 0:  # a time series: a time column first, numbers after it
        assert columns[0] == "time", panel["title"]


def served_metric_names(chdb_dsn) -> set[str]:
    """The sample names an agent (on canned /proc) and a worker serve at /metrics."""
    from producers.agent import Agent, AgentSettings
    from producers.metrics import AgentMetrics
    from producers.publisher import KafkaFramePublisher
    from sinks.landing import open_landing
    from stream_jobs.worker.metrics import WorkerMetrics
    from stream_jobs.worker.shell import WorkerSettings, WorkerShell
    from tests.conftest import FIXTURES

    publisher = KafkaFramePublisher("127.0.0.1:1")
    agent = Agent(AgentSettings(host="h", procfs=str(FIXTURES / "proc"), sysfs=str(FIXTURES / "sysfs-laptop")),
                  publisher)
    agent.sample_once()
    from faust.types import TP

    shell = WorkerShell(WorkerSettings("127.0.0.1:1"), lambda: open_landing(chdb_dsn, "dashboard_metrics"))
    shell.cursors.start(TP("reveal.samples", 0), 10)
    shell.highwater = lambda tp: 12
    registry = CollectorRegistry()
    registry.register(AgentMetrics(agent, publisher, channels=True))
    registry.register(WorkerMetrics(shell, "g"))
    text = generate_latest(registry).decode()
    shell.close(close_incidents=False)
    agent.close()
    publisher.close(timeout_s=0.1)
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


@pytest.fixture(scope="module")
def served(chdb_dsn) -> set[str]:
    return served_metric_names(chdb_dsn)


@pytest.mark.parametrize("name, panel, target", list(panels(PROMETHEUS)))
def test_each_prometheus_panel_asks_for_series_the_agent_or_worker_serves(served, name, panel, target):
    wanted = set(re.findall(r"\breveal_\w+", target["expr"]))
    assert wanted and wanted <= served, f"{panel['title']}: {sorted(wanted - served)} are not served"


def test_the_provisioning_points_grafana_at_the_dashboards_and_both_data_sources():
    sources = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "reveal.yaml").read_text())["datasources"]
    by_uid = {source["uid"]: source for source in sources}
    used = {target["datasource"]["uid"] for dashboard in DASHBOARDS.values() for panel in dashboard["panels"]
            for target in panel["targets"]}
    assert used == set(by_uid)
    assert by_uid["reveal-clickhouse"]["type"] == CLICKHOUSE and by_uid["reveal-prometheus"]["type"] == PROMETHEUS
    providers = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "reveal.yaml").read_text())["providers"]
    assert providers[0]["options"]["path"] == "/var/lib/grafana/dashboards"
