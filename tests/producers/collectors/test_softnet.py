"""SoftnetCollector over /proc/net/softnet_stat of a hand-built 96-CPU host."""

from producers.collectors.softnet import SoftnetCollector
from tests.conftest import FIXTURES

LARGE = FIXTURES / "proc-large"


def test_softnet_parses_hex_and_uses_the_cpu_column():
    collector = SoftnetCollector(LARGE)
    values = collector.collect()
    assert len([n for n in values if n.startswith("net.softnet_dropped.")]) == 96
    first_line = (LARGE / "net" / "softnet_stat").read_text().split()[0]
    assert values["net.softnet_processed.cpu0"] == int(first_line, 16)
    assert collector.describe("net.softnet_time_squeeze.cpu95").kind == "event"
