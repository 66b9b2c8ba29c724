"""The `reveal` entry point notes the commands pointed at a run before they import anything heavy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from reveal.launch import NOTED_COMMANDS, command_named, noted


def test_the_command_is_found_past_the_global_options():
    assert command_named(["--log-level", "DEBUG", "sql", "--query", "x"]) == "sql"
    assert command_named(["report", "--data-dir", "d"]) == "report"
    assert command_named(["--version"]) is None


def test_commands_pointed_at_a_run_are_noted_and_long_running_ones_are_not():
    assert {"sql", "report", "alerts"} <= NOTED_COMMANDS
    assert not {"run", "agent", "worker", "collect", "bench", "lab"} & NOTED_COMMANDS
    assert noted(["alerts", "--bootstrap", "b"]) == "alerts" and noted(["sql", "SELECT 1"]) == "sql"
    assert noted(["alerts", "--follow"]) is None and noted(["alerts", "--webhook", "http://x"]) is None
    assert noted(["run"]) is None


def test_a_reveal_command_leaves_a_note_with_its_start_and_end(tmp_path):
    env = {**os.environ, "REVEAL_COMMANDS_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "reveal", "sql", "--data-dir", str(tmp_path / "none"),
                           "--query", "SELECT 1"], env=env, capture_output=True, text=True, timeout=120)
    notes = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert len(notes) == 1, done.stderr
    assert notes[0]["command"] == "sql" and notes[0]["end_ns"] > notes[0]["start_ns"]
    subprocess.run([sys.executable, "-m", "reveal", "--help"], env=env, capture_output=True, timeout=120)
    assert len(list(tmp_path.glob("*.json"))) == 1
