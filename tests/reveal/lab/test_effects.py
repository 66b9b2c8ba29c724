"""A fault's evidence in the host's own telemetry: a counter's rate during the fault against the baseline, read
across catalog versions."""

import math

import numpy as np

from schemas.records import Catalog, Channel, Frame
from reveal.lab.effects import counter_series, mean_rate

S = 1_000_000_000


def _catalog(version, names):
    return Catalog("h1", "c", tuple(Channel(name, "network", "counter") for name in names), version=version)


def test_a_counter_is_followed_across_catalog_versions_and_missing_from_none():
    first, second = _catalog(1, ("a", "snmp.Tcp.RetransSegs")), _catalog(2, ("snmp.Tcp.RetransSegs", "b", "c"))
    items = [first, Frame("h1", "c", 1 * S, 0, 1, np.array([9.0, 10.0])),
             second, Frame("h1", "c", 2 * S, 1, 2, np.array([12.0, 0.0, 0.0])),
             _catalog(3, ("b",)), Frame("h1", "c", 3 * S, 2, 3, np.array([5.0]))]
    times, values = counter_series(items, "snmp.Tcp.RetransSegs")
    assert times.tolist() == [1 * S, 2 * S] and values.tolist() == [10.0, 12.0]


def test_the_mean_rate_is_the_growth_between_the_first_and_last_sample_inside():
    times = np.arange(0, 11) * S
    values = np.array([0, 1, 2, 3, 13, 23, 33, 34, 35, 36, 37], dtype=float)
    assert mean_rate(times, values, 3 * S, 6 * S) == 10.0
    assert mean_rate(times, values, 0, 2 * S) == 1.0
    assert math.isnan(mean_rate(times, values, 20 * S, 30 * S))
