import subprocess
import sys
import time

import pytest

from schemas.records import Alert, encode_alert
from schemas.topics import TopicNames, ensure_topics
from tests.http_receiver import Receiver
from tests.integration.kafka_io import publish

pytestmark = pytest.mark.integration


def event(state: str, end_s: int, cluster: str = "c1", severity: float = 12.0, alert_id: str = "h1:cpu:1") -> Alert:
    return Alert(alert_id, "h1", cluster, state, 10**18, 10**18 + end_s * 10**9, severity, "cpu",
                 "cpu anomaly on h1 over 3 windows; cpu.user.all mean z=+40.0", "look for a process outside the job")


def reveal_alerts(bootstrap: str, prefix: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "reveal.cli", "alerts", "--bootstrap", bootstrap, "--topic-prefix", prefix,
            *args]


@pytest.fixture
def alerts_topic(kafka_bootstrap, topic_prefix) -> str:
    topics = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, topics)
    return topics.alerts


def test_the_webhook_gets_an_incidents_open_and_close_once_each_across_a_receiver_outage(
        kafka_bootstrap, topic_prefix, alerts_topic):
    receiver = Receiver().start()
    forwarder = subprocess.Popen(reveal_alerts(kafka_bootstrap, topic_prefix, "--webhook", receiver.url,
                                               "--from-beginning", "--group", f"{topic_prefix}hook",
                                               "--duration", "120"),
                                 stderr=subprocess.PIPE, text=True)
    try:
        publish(kafka_bootstrap, alerts_topic, [(b"h1", encode_alert(event("open", 3)))])
        assert len(receiver.wait_for(1, 60)) == 1, "the open event never arrived"
        receiver.stop()
        publish(kafka_bootstrap, alerts_topic, [(b"h1", encode_alert(event("update", 5))),
                                                (b"h1", encode_alert(event("closed", 9))),
                                                (b"h1", encode_alert(event("closed", 9)))])
        time.sleep(10)
        receiver.start()
        receiver.wait_for(3, 60)
        time.sleep(3)  # anything posted twice would arrive now
    finally:
        forwarder.terminate()
        _, stderr = forwarder.communicate(timeout=60)
    states = [(body["status"], body["alerts"][0]["annotations"]["reveal_state"]) for body in receiver.bodies]
    assert states == [("firing", "open"), ("firing", "update"), ("resolved", "closed")], stderr
    assert {body["alerts"][0]["labels"]["incident"] for body in receiver.bodies} == {"h1:cpu:1"}
    assert "retrying until it answers" in stderr and "answers again after" in stderr


def test_a_restarted_forwarder_posts_nothing_it_posted_before(kafka_bootstrap, topic_prefix, alerts_topic):
    receiver = Receiver().start()
    command = reveal_alerts(kafka_bootstrap, topic_prefix, "--webhook", receiver.url, "--webhook-format", "slack",
                            "--from-beginning", "--group", f"{topic_prefix}hook", "--duration", "12")
    publish(kafka_bootstrap, alerts_topic, [(b"h1", encode_alert(event("open", 3)))])
    assert subprocess.run(command, capture_output=True, timeout=120).returncode == 0
    publish(kafka_bootstrap, alerts_topic, [(b"h1", encode_alert(event("closed", 9)))])
    assert subprocess.run(command, capture_output=True, timeout=120).returncode == 0
    receiver.stop()
    assert [body["text"].split("*")[1] for body in receiver.bodies] == ["open", "closed"]


def test_alerts_prints_what_the_topic_holds_filtered_by_cluster_and_severity(kafka_bootstrap, topic_prefix,
                                                                             alerts_topic):
    publish(kafka_bootstrap, alerts_topic, [
        (b"h1", encode_alert(event("open", 3, "c1", 12.0, "a"))),
        (b"h1", encode_alert(event("open", 3, "c1", 2.0, "b"))),
        (b"h1", encode_alert(event("open", 3, "c2", 20.0, "c"))),
        (b"h1", b"not an alert")])
    result = subprocess.run(reveal_alerts(kafka_bootstrap, topic_prefix, "--cluster", "c1", "--min-severity", "5"),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and "OPEN   [anomaly/cpu] c1/h1 severity 12.0 (critical): cpu anomaly on h1" in lines[0]
    assert lines[0].endswith("— hint: look for a process outside the job (a)")
    assert "is not an alert" in result.stderr


def test_a_missing_topic_is_one_clear_line(kafka_bootstrap):
    result = subprocess.run(reveal_alerts(kafka_bootstrap, "no-such-prefix-x."), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "no topic no-such-prefix-x.reveal.alerts" in result.stderr
