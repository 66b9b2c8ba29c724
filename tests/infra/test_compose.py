"""docker-compose.yml provisions Grafana with Reveal's dashboards and data sources, and Prometheus with the agent's
and worker's /metrics; checked by `docker compose config` where Docker exists and by reading the file always."""

import re
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def mounts(service: str) -> dict[str, str]:
    """Bind mounts of a service: path in the container → path in the repository."""
    found = {}
    for volume in SERVICES[service].get("volumes", []):
        source, target = volume.split(":")[:2]
        found[target] = source
    return found


def test_every_part_of_the_stack_is_a_service():
    assert {"kafka", "clickhouse", "agent", "worker", "prometheus", "grafana"} <= set(SERVICES)


def test_every_file_the_services_mount_is_in_the_repository():
    for service in SERVICES:
        for source in mounts(service).values():
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{service} mounts {source}, which is missing"


def test_grafana_gets_the_clickhouse_plugin_the_provisioning_and_the_dashboards():
    grafana = SERVICES["grafana"]
    assert "grafana-clickhouse-datasource" in grafana["environment"]["GF_INSTALL_PLUGINS"]
    assert mounts("grafana")["/etc/grafana/provisioning"] == "./infra/grafana/provisioning"
    provider = yaml.safe_load((ROOT / "infra/grafana/provisioning/dashboards/reveal.yaml").read_text())
    path = provider["providers"][0]["options"]["path"]
    assert (ROOT / mounts("grafana")[path] / "reveal-fleet.json").is_file()
    assert grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].startswith(path)


def test_prometheus_scrapes_the_ports_the_agent_and_worker_serve_metrics_on():
    config = yaml.safe_load((ROOT / mounts("prometheus")["/etc/prometheus/prometheus.yml"]).read_text())
    targets = {target for job in config["scrape_configs"] for group in job["static_configs"]
               for target in group["targets"]}
    served = set()
    for service in ("agent", "worker"):
        port = re.search(r"--metrics-listen 0\.0\.0\.0:(\d+)", SERVICES[service]["command"])
        assert port, f"{service} serves no metrics"
        served.add(f"{service}:{port[1]}")
    assert targets == served


def compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60).returncode == 0


def test_docker_compose_accepts_the_file_where_docker_exists():
    if not compose_available():
        assert yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]  # read above: it parses
        return
    result = subprocess.run(["docker", "compose", "config", "--quiet"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
