"""The field ceiling scores as run.py does: a planted change is found at every threshold below its size, and noise
alone is not precise."""

import json

import numpy as np

from reveal.bench.field_ceiling import ceiling, load_cases, out_of_reach


def write_case(folder, rng, step: float, repeat_baseline: bool = False):
    rows, metrics = 600, 4
    baseline, judged = rng.normal(size=(rows, metrics)), rng.normal(size=(rows, metrics))
    judged = baseline.copy() if repeat_baseline else judged
    judged[300:330, 2] += step
    seconds = np.arange(rows) * 60.0
    for name, values in (("baseline", baseline), ("test", judged)):
        lines = ["timestamp," + ",".join(f"m{j}" for j in range(metrics))]
        lines += [f"{t:g}," + ",".join(f"{v:.6f}" for v in row) for t, row in zip(seconds, values)]
        (folder / f"{name}.csv").write_text("\n".join(lines) + "\n")
    (folder / "labels.json").write_text(json.dumps([{"start": 300 * 60.0, "end": 330 * 60.0, "metrics": ["m2"]}]))


def figures_for(folder, step: float, repeat_baseline: bool = False) -> list[dict]:
    (folder / "c").mkdir(parents=True)
    write_case(folder / "c", np.random.default_rng(1), step, repeat_baseline)
    (folder / "cases.json").write_text(json.dumps(["c"]))
    return ceiling(load_cases(folder), 600.0, quantiles=(0.99, 0.999))


def test_a_large_change_is_found_and_noise_alone_is_not_precise(tmp_path):
    changed, unchanged = figures_for(tmp_path / "step", 8.0), figures_for(tmp_path / "none", 0.0)
    for step, none in zip(changed, unchanged):
        assert step["event_recall"] == 1.0 and step["window_precision"] > none["window_precision"] + 0.3
    assert changed[1]["window_precision"] >= changed[0]["window_precision"]


def test_a_stretch_the_baseline_already_held_is_out_of_reach_and_a_large_change_is_not(tmp_path):
    figures_for(tmp_path / "step", 8.0)
    figures_for(tmp_path / "again", 0.0, repeat_baseline=True)
    reached = out_of_reach(load_cases(tmp_path / "step"), 600.0)[0]
    unreached = out_of_reach(load_cases(tmp_path / "again"), 600.0, quantile=1.0)[0]
    assert reached["events_never_above"] == 0 and unreached["events_never_above"] == 1
    assert 0 <= reached["clean_windows_above"] < 0.1 and unreached["clean_windows_above"] == 0
