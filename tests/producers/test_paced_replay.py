"""The paced replay's fleet: every host in every tick, catalogs first, a step change only on the stepped hosts."""

import numpy as np

from producers.paced_replay import STEP_OFFSET, STEPPED_CHANNEL, FleetSettings, encode_fleet, host_name
from schemas.records import decode_catalog, decode_frame

T0 = 1_700_000_000_000_000_000


def test_each_tick_holds_one_frame_per_host_in_time_order():
    fleet = encode_fleet(FleetSettings(hosts=3, channels=20, interval_s=0.1, duration_s=2.0, step_at_s=1.0), T0)
    assert len(fleet.catalogs) == 3 and len(fleet.ticks) == 20
    for index, tick in enumerate(fleet.ticks):
        frames = [decode_frame(value) for _, value in tick]
        assert [f.host for f in frames] == [host_name(i) for i in range(3)]
        assert {f.timestamp_ns for f in frames} == {T0 + index * 100_000_000}
        assert [key for key, _ in tick] == [f.host.encode() for f in frames]
    assert fleet.frame_bytes == sum(len(v) for tick in fleet.ticks for _, v in tick)


def test_only_stepped_hosts_carry_the_step_from_its_time_on():
    settings = FleetSettings(hosts=2, channels=20, interval_s=0.1, duration_s=4.0, step_at_s=2.0, stepped_hosts=1)
    fleet = encode_fleet(settings, T0)
    column = decode_catalog(fleet.catalogs[0][1]).names.index(STEPPED_CHANNEL)
    series = np.array([[decode_frame(v).values[column] for _, v in tick] for tick in fleet.ticks])
    before, after = series[:20].mean(axis=0), series[20:].mean(axis=0)
    assert after[0] - before[0] > STEP_OFFSET - 3
    assert abs(after[1] - before[1]) < 3
