"""The paced replay's fleet: every host in every tick, catalogs first, a step change only on the stepped hosts."""

import numpy as np
from confluent_kafka import Producer

from producers.publisher import BLOCK_LINGER_MS, FRAME_LINGER_MS, producer_config
from producers.synthetic import synthetic_catalog
from reveal.bench.paced_replay import (STEP_OFFSET, FleetSettings, encode_fleet, encoded_ticks, fleet_batching,
                                       host_name, stepped_channels)
from reveal.bench.pipeline_figures import WARMUP_S
from reveal.lab.replay import replay
from schemas.records import decode_catalog, decode_frame
from stream_jobs.engine.host_pipeline import EngineSettings

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
    names = decode_catalog(fleet.catalogs[0][1]).names
    values = np.array([[decode_frame(v).values for _, v in tick] for tick in fleet.ticks])  # tick, host, channel
    shift = values[20:].mean(axis=0) - values[:20].mean(axis=0)
    gauges = [i for i, name in enumerate(names) if name.startswith("cpu.busy.")]
    stepped = [i for i in gauges if shift[0, i] > STEP_OFFSET - 3]
    assert [names[i] for i in stepped] == ["cpu.busy.cpu0", "cpu.busy.cpu1", "cpu.busy.cpu2"]  # 12 gauges / 4
    assert np.abs(shift[1, gauges]).max() < 3 and np.abs(shift[0, gauges[3:]]).max() < 3


def test_a_run_encoded_in_chunks_continues_every_host_from_chunk_to_chunk():
    settings = FleetSettings(hosts=2, channels=20, interval_s=0.1, duration_s=2.5, step_at_s=1.0, stepped_hosts=1)
    first = encode_fleet(settings, T0, 0, 10)
    ticks = list(encoded_ticks(settings, T0, first))
    assert len(first.ticks) == 10 and len(ticks) == 25
    frames = np.array([[decode_frame(v) for _, v in tick] for tick in ticks])  # tick, host
    assert [f.sequence for f in frames[:, 1]] == list(range(25))
    assert [f.timestamp_ns for f in frames[:, 0]] == [T0 + i * 100_000_000 for i in range(25)]
    names = decode_catalog(first.catalogs[0][1]).names
    counter = names.index("net.rx_bytes.eth0")
    rates = np.diff([f.values[counter] for f in frames[:, 1]])
    assert np.all(np.abs(rates - 1e5) < 1e5)  # ~1 MB/s throughout: no reset where a chunk starts
    gauge = names.index("cpu.busy.cpu0")
    stepped = np.array([f.values[gauge] for f in frames[:, 0]])
    assert stepped[10:].mean() - stepped[:10].mean() > STEP_OFFSET - 5  # the step lands in the second chunk


def test_each_stepped_host_steps_gauges_of_its_own():
    catalog = synthetic_catalog("h", gauges=420, counters=279)
    blocks = [{step.channel for step in stepped_channels(catalog, 1.0, slot, 15)} for slot in range(15)]
    assert all(len(block) == 28 for block in blocks)  # 420 gauges in 15 disjoint blocks, under a quarter each
    assert len(set().union(*blocks)) == 420
    assert len(stepped_channels(catalog, 1.0, 0, 1)) == 105  # one stepped host: a quarter of its gauges
    assert len(stepped_channels(synthetic_catalog("h", gauges=3), 1.0, 5, 15)) == 1


def test_every_stepped_host_of_the_fleet_opens_an_alert_of_its_own():
    settings = FleetSettings(hosts=6, channels=100, interval_s=0.1, duration_s=40.0, step_at_s=28.0, stepped_hosts=3)
    fleet = encode_fleet(settings, T0)
    items = [decode_catalog(value) for _, value in fleet.catalogs]
    items += [decode_frame(value) for tick in fleet.ticks for _, value in tick]
    engine = EngineSettings(window_s=3, stride_s=1, interval_s=settings.interval_s, warmup_s=WARMUP_S)
    opened = [alert for alert in replay(items, engine).cluster.alerts if alert.state == "open"]
    assert sorted(alert.host for alert in opened) == [host_name(i) for i in range(3)]
    assert all(T0 + 28e9 <= alert.start_ns <= T0 + 31e9 for alert in opened)


def test_the_replay_hands_over_record_batches_of_the_size_a_fleet_of_agents_sends():
    blocks = FleetSettings(hosts=3, interval_s=0.1, publish_every_s=1.0)
    frames = FleetSettings(hosts=3, interval_s=0.1, publish_every_s=0.0)
    slow_frames = FleetSettings(hosts=3, interval_s=1.0, publish_every_s=0.0)
    assert fleet_batching(blocks) == {"batch.num.messages": 1}
    assert fleet_batching(frames) == {"batch.num.messages": round(FRAME_LINGER_MS / 100)}
    assert fleet_batching(slow_frames) == {"batch.num.messages": 1}
    config = producer_config("127.0.0.1:9", fleet_batching(blocks), blocks.frames_per_message)
    assert config["linger.ms"] == BLOCK_LINGER_MS
    Producer(config).flush(0)  # librdkafka takes every setting as given
