"""PerfCollector over a scripted opener (hardware, cache, raw events) and over the real syscall (software events)."""

from __future__ import annotations

import errno
import logging
import math
import os
import time

import pytest
from hypothesis import given, strategies as st

from producers.collectors.perf import PerfCollector, parse_cpu_list
from producers.collectors.perf_events import (
    GENERIC_EVENTS, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW, SOFTWARE_EVENTS, VENDOR_EVENTS, PerfEvent,
)
from tests.conftest import FIXTURES
from tests.producers.collectors.test_perf_syscall import refused_by_policy

PERF = FIXTURES / "perf"
SYSFS = PERF / "sys"  # two online CPUs: "0-1"
GENERIC_METRICS = ("pmu.cycles", "pmu.instructions", "pmu.cache_references", "pmu.cache_misses", "pmu.branch_misses",
                   "pmu.stalled_cycles_frontend", "pmu.stalled_cycles_backend", "pmu.llc_load_misses")


class ScriptedOpener:
    """Stands in for the kernel: (value, enabled, running) per event and CPU, and errnos for chosen events."""

    def __init__(self, counts=None, refuse=None, refuse_on=None, default=(1000, 1_000_000, 1_000_000)):
        self.counts = counts or {}  # (event name, cpu) → (value, enabled, running)
        self.refuse = refuse or {}  # event name → errno on every CPU
        self.refuse_on = refuse_on or {}  # (event name, cpu) → errno
        self.default = default
        self.open_fds: dict[int, tuple[str, int]] = {}
        self.opened: list[tuple[PerfEvent, int]] = []
        self.reads = 0
        self.attempts = 0
        self._next_fd = 100

    def open(self, event, cpu):
        self.attempts += 1
        code = self.refuse_on.get((event.name, cpu), self.refuse.get(event.name))
        if code is not None:
            raise OSError(code, f"perf_event_open({event.name}, cpu {cpu}): {os.strerror(code)}")
        self._next_fd += 1
        self.open_fds[self._next_fd] = (event.name, cpu)
        self.opened.append((event, cpu))
        return self._next_fd

    def read(self, fd):
        self.reads += 1
        return self.counts.get(self.open_fds[fd], self.default)

    def close(self, fd):
        del self.open_fds[fd]


def refusing_everything(code, events=()):
    """An opener that refuses every hardware event (and the named software events) with one errno."""
    names = [e.name for e in GENERIC_EVENTS] + [e.name for table in VENDOR_EVENTS.values() for e in table]
    return ScriptedOpener(refuse=dict.fromkeys(names + list(events), code))


def collector(vendor="intel", **kwargs):
    kwargs.setdefault("opener", ScriptedOpener())
    return PerfCollector(PERF / vendor, SYSFS, **kwargs)


# CPU list parsing


def test_cpu_list_with_ranges_and_single_cpus():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("0\n") == [0]
    assert parse_cpu_list("") == []


@given(st.sets(st.integers(0, 4095), min_size=1, max_size=64))
def test_cpu_list_round_trips_the_kernel_format(cpus):
    ordered = sorted(cpus)
    run_starts = [cpu for cpu in ordered if cpu - 1 not in cpus]
    run_ends = [cpu for cpu in ordered if cpu + 1 not in cpus]
    text = ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in zip(run_starts, run_ends))
    assert parse_cpu_list(text + "\n") == ordered


def test_collector_opens_every_event_on_each_listed_cpu(tmp_path):
    (tmp_path / "devices/system/cpu").mkdir(parents=True)
    (tmp_path / "devices/system/cpu/online").write_text("0,2-3\n")
    opener = ScriptedOpener()
    values = PerfCollector(PERF / "amd", tmp_path, opener=opener).collect()
    assert {cpu for _, cpu in opener.opened} == {0, 2, 3}
    assert "pmu.cycles.cpu3" in values and "pmu.cycles.cpu1" not in values


# Scaling for multiplexing


def test_multiplexed_counter_is_scaled_by_enabled_over_running():
    opener = ScriptedOpener(counts={("cycles", 0): (1000, 2_000_000, 1_000_000)})
    values = collector(opener=opener).collect()
    assert values["pmu.cycles.cpu0"] == 2000.0
    assert values["pmu.cycles.cpu1"] == 1000.0  # ran the whole time: unscaled


def test_counter_that_never_ran_reads_zero():
    opener = ScriptedOpener(counts={("instructions", 1): (0, 5_000_000, 0)})
    assert collector(opener=opener).collect()["pmu.instructions.cpu1"] == 0.0


def test_unreadable_counter_reads_nan_and_warns_once(caplog):
    opener = ScriptedOpener()
    perf = collector(opener=opener)
    perf.read()
    broken_fd = next(fd for fd, key in opener.open_fds.items() if key == ("cycles", 1))

    def read(fd, original=opener.read):
        if fd == broken_fd:
            raise OSError(errno.EIO, "perf counter read returned 0 bytes, 24 expected")
        return original(fd)

    opener.read = read
    with caplog.at_level(logging.WARNING):
        first, second = perf.collect(), perf.collect()
    assert math.isnan(first["pmu.cycles.cpu1"]) and math.isnan(second["pmu.cycles.cpu1"])
    assert first["pmu.cycles.cpu0"] == 1000.0
    assert len([r for r in caplog.records if "pmu.cycles.cpu1" in r.getMessage()]) == 1


# Vendor tables


def test_intel_host_adds_the_skylake_raw_events_with_their_encodings():
    opener = ScriptedOpener()
    values = collector("intel", opener=opener).collect()
    raw = {event.name: event.config for event, cpu in opener.opened if event.type == PERF_TYPE_RAW and cpu == 0}
    assert raw == {"cycle_activity.stalls_l3_miss": 0x060006A3, "mem_load_retired.l3_miss": 0x20D1,
                   "mem_inst_retired.all_loads": 0x81D0, "mem_inst_retired.all_stores": 0x82D0}
    assert "pmu.cycle_activity_stalls_l3_miss.cpu0" in values
    assert "pmu.mem_inst_retired_all_stores.cpu1" in values


def test_amd_host_adds_the_zen_load_store_events():
    opener = ScriptedOpener()
    values = collector("amd", opener=opener).collect()
    raw = {event.name: event.config for event, cpu in opener.opened if event.type == PERF_TYPE_RAW and cpu == 0}
    assert raw == {"ls_dispatch.ld_dispatch": 0x129, "ls_dispatch.store_dispatch": 0x229, "ls_dc_accesses": 0x40}
    assert "pmu.ls_dispatch_ld_dispatch.cpu0" in values and "pmu.ls_dc_accesses.cpu1" in values


def test_arm_host_adds_the_pmuv3_common_events():
    opener = ScriptedOpener()
    values = collector("arm", opener=opener).collect()
    raw = {event.name: event.config for event, cpu in opener.opened if event.type == PERF_TYPE_RAW and cpu == 0}
    assert raw == {"stall_backend": 0x24, "stall_frontend": 0x23, "ll_cache_miss_rd": 0x37, "l1d_cache_refill": 0x03}
    assert "pmu.stall_backend.cpu0" in values and "pmu.l1d_cache_refill.cpu1" in values


def test_every_host_gets_the_generic_events_as_cpu_counters(tmp_path):
    perf = PerfCollector(tmp_path, SYSFS, opener=ScriptedOpener())  # no cpuinfo: generic events only
    values = perf.collect()
    assert sorted(values) == sorted(f"{metric}.cpu{cpu}" for metric in GENERIC_METRICS for cpu in (0, 1))
    channel = perf.describe("pmu.llc_load_misses.cpu1")
    assert (channel.subsystem, channel.kind, channel.unit, channel.device) == ("cpu", "counter", "events", "cpu1")


def test_llc_load_misses_uses_the_hw_cache_encoding():
    opener = ScriptedOpener()
    collector(opener=opener).collect()
    llc = next(event for event, _ in opener.opened if event.name == "LLC-load-misses")
    assert (llc.type, llc.config) == (PERF_TYPE_HW_CACHE, 0x10002)


# Availability


def test_event_refused_on_the_first_cpu_is_dropped_everywhere_in_one_log_line(caplog):
    opener = ScriptedOpener(refuse={"stalled-cycles-frontend": errno.ENOENT,
                                    "cycle_activity.stalls_l3_miss": errno.EOPNOTSUPP})
    with caplog.at_level(logging.WARNING, logger="producers.collectors.perf"):
        perf = collector("intel", opener=opener)
        values = perf.collect()
        perf.collect()
    assert not [name for name in values if "stalled_cycles_frontend" in name or "stalls_l3_miss" in name]
    assert "pmu.cycles.cpu1" in values
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "stalled-cycles-frontend (ENOENT)" in lines[0] and "cycle_activity.stalls_l3_miss (EOPNOTSUPP)" in lines[0]


def test_event_refused_on_a_later_cpu_costs_that_channel_alone(caplog):
    opener = ScriptedOpener(refuse_on={("instructions", 1): errno.ENODEV})
    with caplog.at_level(logging.WARNING, logger="producers.collectors.perf"):
        values = collector(opener=opener).collect()
    assert "pmu.instructions.cpu0" in values and "pmu.instructions.cpu1" not in values
    assert len(caplog.records) == 1 and "cpu1" in caplog.records[0].getMessage()


def test_everything_refused_makes_the_source_unavailable_with_the_reason(caplog):
    opener = refusing_everything(errno.EACCES)
    perf = collector("intel", opener=opener)
    with pytest.raises(OSError) as raised:
        perf.read()
    assert raised.value.errno == errno.EACCES
    assert raised.value.strerror == ("perf_event_open refused every PMU event (EACCES: perf_event_paranoid is 2; "
                                     "run as root or grant CAP_PERFMON)")
    with caplog.at_level(logging.WARNING):
        assert not perf.available()
    assert not opener.open_fds


def test_unavailability_is_decided_once():
    opener = refusing_everything(errno.ENOENT)
    perf = collector("amd", opener=opener)
    with pytest.raises(OSError, match="ENOENT: the kernel has no PMU event for them"):
        perf.collect()
    attempts = opener.attempts
    with pytest.raises(OSError, match="ENOENT: the kernel has no PMU event for them"):
        perf.collect()
    assert attempts == len(GENERIC_EVENTS) + len(VENDOR_EVENTS["amd"])  # each tried once, on the first CPU only
    assert opener.attempts == attempts


def test_software_fallback_is_off_by_default():
    with pytest.raises(OSError):
        collector("amd", opener=refusing_everything(errno.ENOENT)).read()


def test_software_fallback_counts_kernel_events_per_cpu_when_no_pmu_event_opens(caplog):
    opener = refusing_everything(errno.ENOENT)
    with caplog.at_level(logging.WARNING, logger="producers.collectors.perf"):
        perf = collector("amd", opener=opener, software_fallback=True)
        values = perf.collect()
    assert sorted(values) == sorted(f"pmu.sw_{name}.cpu{cpu}" for cpu in (0, 1) for name in
                                    ("cpu_clock", "context_switches", "cpu_migrations", "page_faults", "major_faults"))
    assert perf.describe("pmu.sw_cpu_clock.cpu0").unit == "ns"
    assert perf.describe("pmu.sw_page_faults.cpu0").unit == "events"
    assert len(caplog.records) == 1 and "counting software events instead" in caplog.records[0].getMessage()


def test_software_fallback_refused_too_says_both_reasons():
    opener = refusing_everything(errno.ENOENT, [event.name for event in SOFTWARE_EVENTS])
    for event in SOFTWARE_EVENTS:
        opener.refuse[event.name] = errno.EACCES
    with pytest.raises(OSError) as raised:
        collector("amd", opener=opener, software_fallback=True).read()
    assert raised.value.errno == errno.EACCES
    assert raised.value.strerror == ("perf_event_open refused every PMU event (ENOENT: the kernel has no PMU event "
                                     "for them, as in a VM without a virtual PMU) and every software event "
                                     "(EACCES: perf_event_paranoid is 2; run as root or grant CAP_PERFMON)")


def test_everything_refused_for_one_reason_says_it_once():
    opener = refusing_everything(errno.EACCES, [event.name for event in SOFTWARE_EVENTS])
    with pytest.raises(OSError, match=r"refused every PMU and software event \(EACCES: perf_event_paranoid is 2;"):
        collector("amd", opener=opener, software_fallback=True).read()


# Cheap reads and closing


def test_each_read_is_one_read_per_counter_with_the_same_names_tuple():
    opener = ScriptedOpener()
    perf = collector("arm", opener=opener)
    first = perf.read()
    opener.reads = 0
    second = perf.read()
    assert opener.reads == len(second.names) == 2 * (len(GENERIC_METRICS) + 4)
    assert second.names is first.names
    assert len(opener.opened) == len(first.names)  # nothing reopened


def test_close_closes_every_descriptor():
    opener = ScriptedOpener()
    perf = collector("intel", opener=opener)
    perf.read()
    assert opener.open_fds
    perf.close()
    assert opener.open_fds == {}


def test_events_can_be_chosen_by_the_caller():
    only_cycles = [PerfEvent("cycles", 0, 0)]
    assert sorted(collector(opener=ScriptedOpener(), events=only_cycles).collect()) == ["pmu.cycles.cpu0",
                                                                                        "pmu.cycles.cpu1"]


# The real kernel


def busy_work(seconds: float = 0.05) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        sum(range(1000))


def test_real_cpu_clock_on_cpu0_grows_between_reads():
    perf = PerfCollector(events=[SOFTWARE_EVENTS[0]])
    try:
        first = perf.collect()
    except OSError as error:
        assert refused_by_policy(error)
        return
    try:
        busy_work()
        second = perf.collect()
        channel = perf.describe("pmu.sw_cpu_clock.cpu0")
    finally:
        perf.close()
    assert second["pmu.sw_cpu_clock.cpu0"] > first["pmu.sw_cpu_clock.cpu0"] > 0
    assert (channel.kind, channel.unit) == ("counter", "ns")


def test_real_collector_reports_pmu_or_software_channels_with_the_fallback():
    perf = PerfCollector(software_fallback=True)
    try:
        first = perf.read()
    except OSError as error:
        assert refused_by_policy(error)
        return
    try:
        busy_work()
        second = perf.read()
    finally:
        perf.close()
    assert second.names is first.names
    assert "pmu.cycles.cpu0" in first.names or "pmu.sw_cpu_clock.cpu0" in first.names
    assert all(math.isfinite(v) for v in second.values)
    assert all(after >= before for before, after in zip(first.values, second.values))
