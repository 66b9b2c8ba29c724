"""Reveal's measured share is taken out of the host's channels, and what its work moves without a measured share is
left out of the frames it works in, for as long as it works; the rest of the host is judged and learned throughout."""

from __future__ import annotations

import numpy as np

from schemas.channels import (OWN_ANON_BYTES, OWN_CACHED_BYTES, OWN_COMMANDS_SECONDS, OWN_CPU_USER_TICKS,
                              OWN_TCP_CLOSED, OWN_TCP_TIME_WAIT)
from stream_jobs.engine.channels import PAGE_BYTES, ChannelTable
from stream_jobs.engine.derived import signals
from stream_jobs.engine.own_footprint import READING_SPAN_S, OwnFootprint
from stream_jobs.engine.windows import Window

S = 1_000_000_000
CHANNELS = ChannelTable(("sock.tcp_tw", "cpu.user.all", "cpu.user.cpu0", "vm.pgfault", "gpu.util.gpu0",
                         "mem.AnonPages", OWN_TCP_TIME_WAIT, OWN_CPU_USER_TICKS, OWN_COMMANDS_SECONDS, OWN_TCP_CLOSED,
                         OWN_ANON_BYTES),
                        ("gauge", "counter", "counter", "counter", "gauge", "gauge", "gauge", "counter", "counter",
                         "counter", "gauge"),
                        ("network", "cpu", "cpu", "memory", "gpu", "memory", "agent", "agent", "agent", "agent",
                         "agent"))


def window(columns: dict[str, list[float]], step_s: float = 0.1) -> Window:
    frames = len(next(iter(columns.values())))
    values = np.zeros((frames, len(CHANNELS)))
    for name, series in columns.items():
        values[:, CHANNELS.names.index(name)] = series
    return Window(1, 0, round(frames * step_s * S), np.arange(frames, dtype=np.int64) * round(step_s * S), values)


def column(accounted: Window, name: str) -> np.ndarray:
    return accounted.values[:, CHANNELS.names.index(name)]


def test_reveals_sockets_in_time_wait_are_taken_out_of_the_hosts_for_as_long_as_they_last():
    host = [3.0, 3.0, 43.0, 43.0, 43.0, 43.0]
    own = [0.0, 0.0, 40.0, 40.0, 40.0, 40.0]
    accounted, worked = OwnFootprint(CHANNELS).account(window({"sock.tcp_tw": host, OWN_TCP_TIME_WAIT: own}))
    assert column(accounted, "sock.tcp_tw").tolist() == [3.0] * 6
    assert not worked, "sockets waiting out their 60 s are no work"


def test_reveals_cpu_time_is_taken_out_of_the_hosts_count_over_the_window():
    host = np.cumsum([0.0, 2, 2, 12, 2, 2, 2, 2, 2, 2])  # 28 ticks over the window
    own = [0.0] * 5 + [10.0] * 5  # read once a second, ten ticks of it in the burst
    accounted, _ = OwnFootprint(CHANNELS).account(window({"cpu.user.all": host, OWN_CPU_USER_TICKS: own}))
    adjusted = column(accounted, "cpu.user.all")
    assert abs(adjusted[-1] - adjusted[0] - 18.0) < 1e-9
    assert np.all(np.diff(adjusted) >= 0), "a counter stays a counter"


def test_while_reveal_works_what_it_moves_is_left_out_and_what_is_kept_keeps_its_rate():
    frames = 60  # 6 s at 100 ms
    commands = [0.0] * 30 + [0.4] * 30  # a reading at 3 s saw a command run
    every_tick = np.arange(frames) * 10.0  # 100 a second, read every frame
    every_second = np.repeat(np.arange(6) * 100.0, 10)  # 100 a second, read once a second
    accounted, worked = OwnFootprint(CHANNELS).account(window({OWN_COMMANDS_SECONDS: commands,
                                                                "cpu.user.cpu0": every_tick,
                                                                "vm.pgfault": every_second,
                                                                "gpu.util.gpu0": [50.0] * frames}))
    rates = signals(accounted.timestamps_ns, accounted.values, CHANNELS.cumulative)
    near = np.abs(np.arange(frames) * 0.1 - 3.0) < READING_SPAN_S
    assert worked and np.isnan(column(accounted, "cpu.user.cpu0")[near]).all()
    for name in ("cpu.user.cpu0", "vm.pgfault"):
        kept = rates[:, CHANNELS.names.index(name)]
        assert np.isfinite(kept).sum() >= 20 and abs(np.nanmean(kept) - 100.0) < 1e-6, name
    assert column(accounted, "gpu.util.gpu0").tolist() == [50.0] * frames


def test_memory_reveal_keeps_after_its_work_is_taken_out_and_what_moves_while_it_works_is_left_out():
    commands = [0.0] * 20 + [0.4] * 40  # a reading at 2 s saw a command run; the run kept 50 MB more after it
    host = [1.0e9] * 20 + [1.05e9] * 40
    own = [2.0e8] * 20 + [2.5e8] * 40
    accounted, _ = OwnFootprint(CHANNELS).account(window({OWN_COMMANDS_SECONDS: commands, "mem.AnonPages": host,
                                                          OWN_ANON_BYTES: own}))
    anon = column(accounted, "mem.AnonPages")
    near = np.abs(np.arange(60) * 0.1 - 2.0) < READING_SPAN_S
    assert np.isnan(anon[near]).all() and anon[~near].tolist() == [8.0e8] * int((~near).sum())


def test_connections_to_reveal_that_closed_between_two_readings_are_work():
    closed = [5.0] * 10 + [7.0] * 10
    _, worked = OwnFootprint(CHANNELS).account(window({OWN_TCP_CLOSED: closed}))
    _, idle = OwnFootprint(CHANNELS).account(window({OWN_TCP_CLOSED: [7.0] * 20}))
    assert worked and not idle


def test_a_host_without_reveals_channels_is_left_as_it_is():
    table = ChannelTable(("cpu.user.cpu0",), ("counter",), ("cpu",))
    values = np.arange(4.0)[:, None]
    original = Window(1, 0, 4 * S, np.arange(4, dtype=np.int64) * S, values)
    accounted, worked = OwnFootprint(table).account(original)
    assert accounted is original and not worked


def test_the_page_cache_of_reveals_data_folder_is_taken_out_of_levels_in_bytes_and_in_pages():
    channels = ChannelTable(("mem.Cached", "vm.nr_file_pages", "mem.MemFree", OWN_CACHED_BYTES),
                            ("gauge",) * 4, ("memory", "memory", "memory", "agent"),
                            ("bytes", "pages", "bytes", "bytes"))
    own = 40.0 * PAGE_BYTES
    values = np.array([[100.0 * PAGE_BYTES, 100.0, 500.0 * PAGE_BYTES, own]] * 4)
    timestamps = np.arange(4, dtype=np.int64) * S // 10
    accounted, worked = OwnFootprint(channels).account(Window(1, 0, 4 * S // 10, timestamps, values))
    assert accounted.values[:, 0].tolist() == [60.0 * PAGE_BYTES] * 4
    assert accounted.values[:, 1].tolist() == [60.0] * 4, "a share in bytes is that many pages of a level in pages"
    assert accounted.values[:, 2].tolist() == [540.0 * PAGE_BYTES] * 4, "the cache Reveal holds would be free"
    assert not worked, "a page cache that outlasts Reveal's writes is no work"


def test_sockets_that_leave_time_wait_between_the_hosts_reading_and_reveals_stay_reveals():
    # seen live: 23 of Reveal's sockets left TIME_WAIT after the host's count was read and before Reveal's was
    host = [288.0, 288.0, 311.0, 311.0, 311.0, 311.0, 288.0, 288.0]
    own = [288.0, 288.0, 311.0, 311.0, 288.0, 288.0, 288.0, 288.0]
    accounted, _ = OwnFootprint(CHANNELS).account(window({"sock.tcp_tw": host, OWN_TCP_TIME_WAIT: own}))
    assert column(accounted, "sock.tcp_tw").tolist() == [0.0] * 8
