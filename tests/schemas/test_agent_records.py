"""The agent's hand-written encoders write, byte for byte, what the schemas' fastavro codecs write, for any frame and
any catalog; a schema that no longer fingerprints as they expect stops schemas.records from importing."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import schemas.records as records
from schemas.agent_records import CHANNEL_KINDS, Catalog, Channel, Frame, encode_catalog, encode_frame
from schemas.channels import SUBSYSTEMS
from schemas.records import CATALOG_CODEC, FRAME_CODEC


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=20), st.text(max_size=20), st.integers(1, 2**63 - 1), st.integers(0, 2**63 - 1),
       st.integers(-(2**63), 2**63 - 1), st.lists(st.floats(allow_infinity=False), max_size=50))
def test_the_hand_written_frame_encoder_writes_what_fastavro_writes(host, cluster, timestamp, sequence, version,
                                                                     values):
    frame = Frame(host, cluster, timestamp, sequence, version, np.asarray(values, dtype=np.float64))
    assert encode_frame(frame) == FRAME_CODEC.encode(frame.to_record())

a_channel = st.builds(Channel, st.text(min_size=1, max_size=12), st.sampled_from(SUBSYSTEMS),
                      st.sampled_from(CHANNEL_KINDS), st.text(max_size=8), st.text(max_size=8))

@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=20), st.text(max_size=20),
       st.lists(a_channel, max_size=30, unique_by=lambda channel: channel.name),
       st.floats(0.001, 3600.0))
def test_the_hand_written_catalog_encoder_writes_what_fastavro_writes(host, cluster, channels, interval_s):
    catalog = Catalog(host, cluster, tuple(channels), interval_s)
    assert encode_catalog(catalog) == CATALOG_CODEC.encode(catalog.to_record())


def test_a_schema_that_no_longer_fingerprints_as_the_hand_written_encoders_expect_is_refused(monkeypatch):
    monkeypatch.setattr(records, "CATALOG_SCHEMA_FINGERPRINT", bytes(8))
    with pytest.raises(ImportError, match=r"catalog\.avsc changed .*agent_records"):
        records._check_agent_encoders()
