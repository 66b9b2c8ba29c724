"""`reveal agent`: a broker that does not answer at start is waited out through the spool when there is one and is an
error when there is none; and the defaults an agent starts with."""

import pytest

from reveal.cli import agent, build_parser
from schemas.topics import BrokerUnavailable, TopicNames

NOBODY = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}


def test_a_silent_broker_is_waited_out_through_the_spool_or_is_an_error_without_one(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(agent, "START_WAIT_S", 1.0)
    assert agent._topics_ready(NOBODY, TopicNames("agent-test."), tmp_path / "spool") is False
    assert "frames wait in the spool" in caplog.text
    with pytest.raises(BrokerUnavailable, match="127.0.0.1:1 did not answer within 1 s"):
        agent._topics_ready(NOBODY, TopicNames("agent-test."), None)


def test_an_agent_spools_up_to_256_mb_and_records_only_when_asked(tmp_path):
    args = build_parser().parse_args(["agent", "--bootstrap", "127.0.0.1:9092"])
    assert (args.spool_max_mb, args.no_spool, args.spool_dir, args.record, args.metrics_listen) == \
        (256, False, None, None, None)
    recording = str(tmp_path / "host.avro")
    args = build_parser().parse_args(["agent", "--bootstrap", "127.0.0.1:9092", "--no-spool", "--record", recording])
    assert args.no_spool and args.record == recording
