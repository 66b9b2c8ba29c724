"""The captured cgroup hosts the cgroup collectors' tests read: a v2 docker host (three containers) and a v1 one (two)."""

from __future__ import annotations

from pathlib import Path

from producers.collectors.cgroups import CgroupCollector
from tests.conftest import FIXTURES

V2 = FIXTURES / "cgroup-v2"
V1 = FIXTURES / "cgroup-v1"
POSTGRES = "docker-e94cbe407f7f6a9581e4c2eaa360b2e2c4bb658a97ecf9b6e15f8052ac1f9d73.scope"
REDIS = "docker-ebf47374915f9435c087c68acf4d66215b775504928562a9d0e0a71564364e8c.scope"
NGINX = "docker-63159f9c66844d20c2ef7e6eb54f189fb4b49d1e76b13a4eca6fb19f2173e7e6.scope"
V1_APP = "21c5e4013ea3b37fce494ed2d0362262705fb80fca030b2de654587e6b4a70a1"
V1_WORKER = "d71fc295ee5416a54d799fedce56a217edbfea6556e7976c2934277a0d41d51c"


def v2_collector(root: Path = V2, **options) -> CgroupCollector:
    return CgroupCollector(root=root, parent="system.slice", **options)


def v1_collector(root: Path = V1, **options) -> CgroupCollector:
    return CgroupCollector(root=root, parent="docker", **options)


def metric_of(collector: CgroupCollector, name: str) -> str:
    """The channel name without its device: what v1 and v2 hosts share."""
    return name[:-len(collector.describe(name).device) - 1]


def devices_of(collector: CgroupCollector, names) -> set[str]:
    return {collector.describe(name).device for name in names}
