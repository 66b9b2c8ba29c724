"""Ground truth on disk: fault labels written and read back unchanged (drops timeline and setting included), files
written before faults from the start still read, impossible labels refused, and a malformed line named by its
number."""

import pytest

from reveal.lab.truth import FaultLabel, read_truth, write_truth

T0 = 1_790_000_000_000_000_000
S = 1_000_000_000


def test_labels_are_read_back_as_written(tmp_path):
    labels = [FaultLabel("packet_loss", "h2", T0, T0 + 30 * S, "network", 0.01, "1 % of frames", True,
                         {"packets_dropped": 40.0, "retransmitted_segments": 41.0}, ((T0, 0), (T0 + 30 * S, 40))),
              FaultLabel("cpu_contention", "h1", T0 + 60 * S, T0 + 90 * S, "cpu", 2.0, took_effect=False)]
    write_truth(tmp_path / "truth.jsonl", labels)
    assert read_truth(tmp_path / "truth.jsonl") == labels


def test_an_interval_that_does_not_move_forward_or_an_unknown_subsystem_is_refused():
    with pytest.raises(ValueError, match="is not after start_ns"):
        FaultLabel("straggler", "h1", T0, T0, "cpu", 0.2)
    with pytest.raises(ValueError, match="subsystem 'disk' is not one of"):
        FaultLabel("storage_burst", "h1", T0, T0 + S, "disk", 50.0)


def test_a_malformed_line_is_named_by_its_number(tmp_path):
    path = tmp_path / "truth.jsonl"
    write_truth(path, [FaultLabel("straggler", "h1", T0, T0 + S, "cpu", 0.2)])
    path.write_text(path.read_text() + "\n" + '{"fault": "straggler", "host": "h1"}\n')
    with pytest.raises(ValueError, match=r"truth.jsonl:3: not a fault label"):
        read_truth(path)


def test_a_fault_from_the_start_keeps_its_setting_and_older_files_read_without_either(tmp_path):
    reno = FaultLabel("congestion_control", "h6", T0 - 40 * S, T0 + 150 * S, "network", 0.0,
                      "congestion_control reno on h6", True, {"value": "reno", "peers_value": "bbr"},
                      from_start=True, setting="reno")
    write_truth(tmp_path / "truth.jsonl", [reno])
    assert read_truth(tmp_path / "truth.jsonl") == [reno]
    (tmp_path / "old.jsonl").write_text('{"fault": "straggler", "host": "h1", "start_ns": 1, "end_ns": 2, '
                                        '"subsystem": "cpu", "magnitude": 0.2}\n')
    old = read_truth(tmp_path / "old.jsonl")[0]
    assert (old.from_start, old.setting) == (False, "")
