"""A first day's small mistakes, each told in one line with what to do instead, and nothing lost."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd


def reveal(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True, timeout=120,
                          **kwargs)


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    told = [line for line in result.stderr.splitlines() if line.startswith("reveal ")]
    assert len(told) == 1 and "Traceback" not in result.stderr, result.stderr
    return told[0]


def test_output_read_only_in_part_ends_quietly():
    piped = subprocess.run(f"{sys.executable} -m reveal.cli --log-level ERROR channels | head -1", shell=True,
                           capture_output=True, text=True, timeout=120)
    assert piped.stdout.startswith("host") and piped.stderr == ""


def test_an_interval_longer_than_half_the_window_is_refused(tmp_path):
    line = one_line(reveal("run", "--interval", "10", "--duration", "5", "--data-dir", str(tmp_path / "d")))
    assert "--interval 10" in line and "--window" in line
    assert not (tmp_path / "d" / "clickhouse").exists()


def test_a_table_sampled_more_slowly_than_the_window_is_refused(tmp_path):
    path = tmp_path / "slow.csv"
    pd.DataFrame({"timestamp": np.arange(50) * 300, "m": np.arange(50.0)}).to_csv(path, index=False)
    line = one_line(reveal("detect", "--input", str(path)))
    assert "every 300 s" in line and "--window" in line


def test_collect_keeps_an_existing_recording(tmp_path):
    out = tmp_path / "kept.avro"
    out.write_bytes(b"earlier recording")
    assert "--overwrite" in one_line(reveal("collect", "--out", str(out), "--duration", "1"))
    assert out.read_bytes() == b"earlier recording"


def test_a_required_option_may_come_from_the_settings_file(tmp_path):
    table = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"timestamp": np.arange(40.0), "m": rng.normal(size=40)}).to_csv(table, index=False)
    config = tmp_path / "reveal.toml"
    config.write_text(f'[detect]\ninput = "{table}"\n')
    done = reveal("detect", "--config", str(config), "--output", str(tmp_path / "o.csv"))
    assert done.returncode == 0, done.stderr
    missing = one_line(reveal("detect", "--output", str(tmp_path / "o.csv")))
    assert "--input is required" in missing and "REVEAL_INPUT" in missing


def test_a_column_without_any_number_is_named(tmp_path):
    table = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"timestamp": np.arange(40.0), "m": rng.normal(size=40), "blank": np.nan}).to_csv(table, index=False)
    done = reveal("detect", "--input", str(table), "--output", str(tmp_path / "o.csv"))
    assert done.returncode == 0 and "no number in any row" in done.stderr and "blank" in done.stderr


def test_a_binary_file_given_as_csv_is_not_echoed(tmp_path):
    table = tmp_path / "t.csv"
    table.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00garbage,\x00\x00\xff\xfe\n" * 20)
    line = one_line(reveal("detect", "--input", str(table)))
    assert "binary" in line and "\x00" not in line and "ELF" not in line


def test_a_lab_run_with_a_broken_run_json_names_that_file(tmp_path):
    run = tmp_path / "run"
    (run / "telemetry").mkdir(parents=True)
    (run / "telemetry" / "h1.avro").write_bytes(b"")
    (run / "run.json").write_text("{broken")
    line = reveal("lab", "rescore", str(run)).stderr.strip().splitlines()[-1]
    assert "run.json" in line and "JSON" in line and "logs" not in line
    (run / "run.json").write_text(json.dumps({"run_id": "r"}))
    line = reveal("lab", "rescore", str(run)).stderr.strip().splitlines()[-1]
    assert "run.json" in line and "baseline_s" in line
