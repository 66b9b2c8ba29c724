"""A catalog's version is a property of its set of channels, not of their order, and so is the canonical order agents
lay frames out in; recordings made when versions followed the order still decode."""

import pytest
from hypothesis import given, settings, strategies as st

from schemas.agent_records import (CHANNEL_KINDS, Catalog, Channel, canonical_order, catalog_fingerprint,
                                   ordered_fingerprint)
from schemas.channels import SUBSYSTEMS

a_channel = st.builds(Channel, st.text(min_size=1, max_size=12), st.sampled_from(SUBSYSTEMS),
                      st.sampled_from(CHANNEL_KINDS), st.text(max_size=8), st.text(max_size=8))
channel_lists = st.lists(a_channel, min_size=1, max_size=40, unique_by=lambda channel: channel.name)


@settings(max_examples=300, deadline=None)
@given(channel_lists, st.data())
def test_the_same_channels_in_any_order_have_one_version_and_one_canonical_order(channels, data):
    shuffled = data.draw(st.permutations(channels))
    catalog, reordered = (Catalog("h", "c", tuple(listed), 0.1) for listed in (channels, shuffled))
    assert catalog.version == reordered.version
    canonical = [catalog.names[i] for i in canonical_order(catalog.names)]
    assert canonical == [reordered.names[i] for i in canonical_order(reordered.names)]


@settings(max_examples=200, deadline=None)
@given(channel_lists, st.data())
def test_a_channel_declared_otherwise_makes_another_version(channels, data):
    changed = data.draw(st.integers(0, len(channels) - 1))
    kind = data.draw(st.sampled_from([k for k in CHANNEL_KINDS if k != channels[changed].kind]))
    redeclared = [Channel(c.name, c.subsystem, kind, c.unit, c.device) if i == changed else c
                  for i, c in enumerate(channels)]
    assert catalog_fingerprint(redeclared) != catalog_fingerprint(channels)


def test_canonical_order_compares_numbers_as_numbers_and_the_rest_as_text():
    names = ["irq.RES.cpu0", "cpu.busy.cpu10", "irq.36.cpu0", "cpu.busy.cpu2", "cpu.busy.cpu02", "irq.total.cpu1"]
    assert [names[i] for i in canonical_order(names)] == ["cpu.busy.cpu02", "cpu.busy.cpu2", "cpu.busy.cpu10",
                                                          "irq.36.cpu0", "irq.RES.cpu0", "irq.total.cpu1"]


def test_a_recorded_catalog_keeps_the_version_its_frames_name_whichever_fingerprint_it_was_made_with():
    channels = (Channel("irq.RES.cpu0", "cpu", "counter", "interrupts", "cpu0"),
                Channel("irq.36.cpu0", "cpu", "counter", "interrupts", "cpu0"))
    record = Catalog("h", "c", channels, 0.1).to_record()
    assert Catalog.from_record(record).version == catalog_fingerprint(channels)
    legacy = {**record, "version": ordered_fingerprint(channels)}
    assert legacy["version"] != record["version"]
    assert Catalog.from_record(legacy).version == legacy["version"]
    with pytest.raises(ValueError, match="claims version"):
        Catalog.from_record({**record, "version": record["version"] + 1})
