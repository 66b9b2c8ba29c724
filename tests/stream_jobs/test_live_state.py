import json
import math

import numpy as np

from schemas.records import Alert, Anomaly, Catalog, Channel, Evidence, Frame
from stream_jobs.engine.verdicts import WindowVerdict
from stream_jobs.live_state import LiveState

HOSTILE = '<img src=x onerror="alert(1)">'


def _catalog(version: int = 1) -> Catalog:
    return Catalog(HOSTILE, "c", (Channel("cpu.user.all", "cpu", "counter", "ticks", ""),
                                  Channel("disk.read_bytes", "storage", "counter", "bytes", "vda")), version=version)


def _verdict(window_id: int, ready: bool, changed: bool = False) -> WindowVerdict:
    return WindowVerdict(window_id, window_id * 10**9, (window_id + 3) * 10**9, 30, ready, float("nan") if not ready
                         else 1.5, 3.0, False, (), "", "", (), {"zscore": 1.5}, {"zscore": 3.0},
                         baseline_changed=changed)


def test_a_host_learning_says_why_and_how_far_and_its_scores_are_json_without_nan():
    state = LiveState(warmup_windows=10)
    state.on_catalog(_catalog())
    state.on_window(HOSTILE, _verdict(1, False, changed=True))
    [host] = state.snapshot()["hosts"]
    assert host["host"] == HOSTILE and host["channels"] == 2
    assert host["learning"] == ("learning this host's first baseline: window 1 of 10, nothing is judged until it is "
                                "learned")
    assert host["scores"][0]["score"] is None
    json.dumps(state.snapshot(), allow_nan=False)


def test_a_catalog_change_is_given_as_the_reason_for_learning_again():
    state = LiveState(warmup_windows=10)
    state.on_catalog(_catalog())
    for window_id in range(12):
        state.on_window(HOSTILE, _verdict(window_id, window_id >= 10, changed=window_id == 10))
    assert state.snapshot()["hosts"][0]["learning"] == ""
    state.on_catalog(_catalog(version=2))
    state.on_window(HOSTILE, _verdict(12, False, changed=True))
    host = state.snapshot()["hosts"][0]
    assert host["catalog_changes"] == 1
    assert host["learning"].startswith("relearning its baseline after the channel catalog changed")


def test_incidents_move_from_open_to_recent_and_their_channels_are_traced():
    state = LiveState(warmup_windows=1)
    state.on_catalog(_catalog())
    for index in range(5):
        state.on_frame(Frame(HOSTILE, "c", index * 10**8, index, 1, np.array([index, math.nan])))
    state.on_anomaly(Anomaly(HOSTILE, "c", 3, 0, 3 * 10**9, ("watch",), 9.0, 1.0, "storage", "reads rose", (
        Evidence("disk.read_bytes", "mean", 5e6, 1e3, 1e2, 49.9),)))
    opened = Alert(f"{HOSTILE}:3", HOSTILE, "c", "open", 0, 3 * 10**9, 9.0, "storage", "disk.read_bytes rose", "", "anomaly")
    state.on_alert(opened)
    host = state.snapshot()["hosts"][0]
    assert [i["state"] for i in host["open_incidents"]] == ["open"] and host["recent_incidents"] == []
    assert [t["channel"] for t in host["traces"]] == ["disk.read_bytes"]
    assert host["traces"][0]["values"] == [None] * 4 and host["traces"][0]["per"] == "per second"
    state._implicate(state._hosts[HOSTILE], ["cpu.user.all"])
    rates = state.snapshot()["hosts"][0]["traces"][0]
    assert rates["channel"] == "cpu.user.all" and rates["values"] == [10.0] * 4
    state.on_alert(Alert(**{**opened.__dict__, "state": "closed"}))
    host = state.snapshot()["hosts"][0]
    assert host["open_incidents"] == [] and [i["state"] for i in host["recent_incidents"]] == ["closed"]
    state.on_alert(Alert(**{**opened.__dict__, "state": "update", "summary": "back after a quiet spell"}))
    host = state.snapshot()["hosts"][0]
    assert [i["state"] for i in host["open_incidents"]] == ["update"] and host["recent_incidents"] == [], \
        "a reopened incident is open again, and only there"


def test_how_sure_the_baseline_is_reaches_the_page_as_the_runner_says_it():
    state = LiveState(warmup_windows=10)
    state.on_catalog(_catalog())
    state.on_window(HOSTILE, _verdict(20, True), "learned 30 s of this host; judging only changes 4.5 times …")
    assert state.snapshot()["hosts"][0]["sureness"].startswith("learned 30 s of this host")
    state.on_window(HOSTILE, _verdict(21, True))
    assert state.snapshot()["hosts"][0]["sureness"] == ""
