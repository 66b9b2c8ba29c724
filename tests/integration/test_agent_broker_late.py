"""`reveal agent` started while its broker is down: it samples from the start, spools, and delivers every frame in
order once a broker comes up, with one log line for the outage rather than one per reconnect."""

import re
import subprocess
import sys
import time

import pytest

from producers.spool import DiskSpool
from schemas.agent_records import frames_in
from schemas.topics import TopicNames
from tests.integration.kafka_io import read_frames
from tests.integration.own_broker import OwnBroker

pytestmark = pytest.mark.integration


def test_an_agent_started_before_its_broker_spools_from_the_first_frame_and_delivers_them_all(kafka_bootstrap,
                                                                                             tmp_path):
    broker = OwnBroker(tmp_path / "kafka", port=19300)
    names = TopicNames("late-broker.")
    agent = subprocess.Popen([sys.executable, "-m", "reveal.cli", "agent", "--bootstrap", broker.bootstrap,
                              "--topic-prefix", names.prefix, "--spool-dir", str(tmp_path / "spool"), "--duration",
                              "40", "--interval", "0.5", "--host", "late-host"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(12)
        assert agent.poll() is None, agent.stderr.read()[-2000:]
        assert any((tmp_path / "spool").iterdir()), "frames wait in the spool while no broker answers"
        broker.start()
        _, stderr = agent.communicate(timeout=150)
        frames = read_frames(broker.bootstrap, names.samples, 80, timeout_s=60)
    finally:
        if agent.poll() is None:
            agent.kill()
        broker.stop()
    assert agent.returncode == 0, stderr[-2000:]
    complaints = [line for line in stderr.splitlines()
                  if (" WARNING " in line or " ERROR " in line or "%" in line[:3]) and "producers.collectors" not in line]
    assert "Traceback" not in stderr and len(complaints) == 1, "\n".join(complaints)
    assert stderr.count("did not answer") == 1
    sequences = [f.sequence for f in frames]
    assert len(sequences) >= 75 and sequences == list(range(len(sequences)))


def test_an_agent_that_stops_while_its_broker_is_down_ends_at_once_and_keeps_its_frames_in_the_spool(tmp_path):
    started = time.monotonic()
    agent = subprocess.run([sys.executable, "-m", "reveal.cli", "agent", "--bootstrap", "127.0.0.1:1",
                            "--spool-dir", str(tmp_path / "spool"), "--duration", "3", "--interval", "0.5",
                            "--host", "down-host"], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert "Traceback" not in agent.stderr
    assert took < 25, f"an agent of 3 s whose broker never answered took {took:.0f} s to end"
    kept = [line for line in agent.stderr.splitlines() if "kept in the spool" in line]
    sampled = re.search(r"agent stopped: (\d+) frames sampled", agent.stderr)
    spool = DiskSpool(tmp_path / "spool")
    records = spool.peek(len(spool))
    spool.close()
    assert kept and sampled and int(sampled[1]) >= 4, agent.stderr[-1500:]
    assert [r.topic for r in records[:1]] == [TopicNames().catalog]
    assert sum(frames_in(r.value) for r in records) == int(sampled[1]), "every frame sampled waits in the spool"
