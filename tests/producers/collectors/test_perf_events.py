"""The PMU event tables: the CPU vendor read from /proc/cpuinfo picks the raw events."""

import pytest

from producers.collectors.perf_events import cpu_vendor
from tests.conftest import FIXTURES

PERF = FIXTURES / "perf"


@pytest.mark.parametrize("vendor, expected", [("intel", "intel"), ("amd", "amd"), ("arm", "arm")])
def test_vendor_from_captured_cpuinfo(vendor, expected):
    assert cpu_vendor((PERF / vendor / "cpuinfo").read_text()) == expected


def test_vendor_is_unknown_for_apple_cores_and_other_cpus():
    assert cpu_vendor("processor\t: 0\nCPU implementer\t: 0x61\n") == ""
    assert cpu_vendor("processor\t: 0\nvendor_id\t: CentaurHauls\n") == ""
    assert cpu_vendor("") == ""
