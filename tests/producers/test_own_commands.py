"""Reveal's commands note themselves in a shared folder; the agent's ledger turns the notes into seconds run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from producers.own_commands import (KEPT_AFTER_END_S, NS_PER_S, REOPEN_EVERY_S, RESCAN_EVERY_S, UNSETTLED_S,
                                    CommandLedger, noted_command, process_start_ns)
from producers.collectors.own_footprint import OwnProcessesCollector
from schemas.channels import OWN_COMMANDS_SECONDS


def test_a_noted_command_is_running_while_its_block_runs_and_ended_after(tmp_path):
    ledger = CommandLedger(tmp_path)
    with noted_command("sql", tmp_path) as note:
        running = ledger.running_seconds()
        assert ledger.running_now() == 1
        content = json.loads(note.read_text())
        assert content["command"] == "sql" and content["end_ns"] is None
        assert content["start_ns"] <= time.time_ns()
    ended = ledger.running_seconds()
    assert ledger.running_now() == 0
    assert ended >= running > 0
    later = ledger.running_seconds(time.time_ns() + 5 * NS_PER_S)
    assert later == ended


def test_the_note_starts_when_the_process_did_so_its_start_up_counts():
    start = process_start_ns()
    assert start is not None and start <= time.time_ns()
    assert time.time_ns() - start < 3600 * NS_PER_S


def test_a_killed_command_is_over_when_its_process_is_gone(tmp_path):
    code = ("import sys, time\nfrom pathlib import Path\nfrom producers.own_commands import noted_command\n"
            f"with noted_command('report', Path({str(tmp_path)!r})):\n    print('noted', flush=True)\n"
            "    time.sleep(60)\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "noted"
    ledger = CommandLedger(tmp_path)
    ledger.running_seconds()
    assert ledger.running_now() == 1
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    after_kill = ledger.running_seconds()
    assert ledger.running_now() == 0
    assert ledger.running_seconds(time.time_ns() + 10 * NS_PER_S) == after_kill


def test_ended_notes_are_pruned_once_old_and_their_seconds_stay_counted(tmp_path):
    now = time.time_ns()
    note = tmp_path / "1-1.json"
    note.write_text(json.dumps({"pid": 1, "command": "sql", "start_ns": now - 2 * NS_PER_S, "end_ns": now}))
    ledger = CommandLedger(tmp_path)
    counted = ledger.running_seconds(now)
    assert abs(counted - 2.0) < 1e-6
    much_later = now + round((KEPT_AFTER_END_S + 1) * NS_PER_S)
    assert ledger.running_seconds(much_later) == counted
    assert not note.exists()


def test_broken_notes_and_a_missing_folder_cost_nothing(tmp_path):
    (tmp_path / "9-9.json").write_text("{not json")
    (tmp_path / "8-8.json").write_text(json.dumps({"pid": "x"}))
    assert CommandLedger(tmp_path).running_seconds() == 0.0
    assert CommandLedger(tmp_path / "absent").running_seconds() == 0.0


def test_an_unwritable_folder_loses_the_note_not_the_command(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    ran = []
    with noted_command("sql", blocker / "notes") as note:
        ran.append(True)
    assert ran and note is None


def test_the_agent_reports_the_seconds_as_a_counter_of_its_own(tmp_path):
    collector = OwnProcessesCollector(CommandLedger(tmp_path))
    before = collector.read()
    with noted_command("alerts", tmp_path):
        time.sleep(0.05)
        during = dict(zip(*astuple_reading(collector.read())))[OWN_COMMANDS_SECONDS]
    channel = collector.describe(OWN_COMMANDS_SECONDS)
    assert (channel.kind, channel.unit, channel.subsystem) == ("counter", "s", "agent")
    assert dict(zip(*astuple_reading(before)))[OWN_COMMANDS_SECONDS] == 0.0 and during >= 0.05


def astuple_reading(reading) -> tuple:
    return reading.names, reading.values


def test_a_settled_unchanged_folder_is_read_again_only_every_few_seconds(tmp_path):
    start = time.time_ns()
    note = tmp_path / f"{os.getpid()}-1.json"
    note.write_text(json.dumps({"pid": os.getpid(), "command": "sql", "start_ns": start, "end_ns": None}))
    settled = os.stat(tmp_path).st_mtime_ns + round(2 * UNSETTLED_S * NS_PER_S)
    ledger = CommandLedger(tmp_path)
    ledger.running_seconds(settled)
    assert ledger.running_now() == 1
    ended = {"pid": os.getpid(), "command": "sql", "start_ns": start, "end_ns": start + NS_PER_S}
    with open(note, "r+") as rewritten:  # in place: the folder itself is unchanged
        rewritten.write(json.dumps(ended))
    os.utime(tmp_path, ns=(settled, os.stat(tmp_path).st_mtime_ns))
    ledger.running_seconds(settled + NS_PER_S)
    assert ledger.running_now() == 1, "an unchanged folder was read again at once"
    ledger.running_seconds(settled + round((RESCAN_EVERY_S + 1) * NS_PER_S))
    assert ledger.running_now() == 0


def test_a_note_renamed_into_the_folder_is_read_at_the_next_scan(tmp_path):
    ledger = CommandLedger(tmp_path)
    assert ledger.running_seconds() == 0.0
    with noted_command("report", tmp_path):
        ledger.running_seconds()
        assert ledger.running_now() == 1
    ledger.running_seconds()
    assert ledger.running_now() == 0


def test_a_missing_folder_is_made_as_a_command_would_and_then_watched(tmp_path):
    folder = tmp_path / "notes"
    ledger = CommandLedger(folder)
    assert ledger.running_seconds() == 0.0
    assert folder.is_dir() and folder.stat().st_mode & 0o1777 == 0o1777
    with noted_command("sql", folder):
        ledger.running_seconds()
        assert ledger.running_now() == 1
    ledger.close()


def test_a_folder_removed_and_made_again_is_followed_to_the_new_one(tmp_path):
    folder = tmp_path / "notes"
    ledger = CommandLedger(folder)
    ledger.running_seconds()
    folder.rmdir()
    with noted_command("report", folder):
        ledger.running_seconds()
        assert ledger.running_now() == 1, "the ledger kept watching the removed folder"
    ledger.close()


def test_a_folder_that_cannot_be_made_is_looked_for_again_a_second_later(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    ledger = CommandLedger(blocker / "notes")
    now = time.time_ns()
    assert ledger.running_seconds(now) == 0.0
    blocker.unlink()
    blocker.mkdir()
    with noted_command("alerts", blocker / "notes"):
        ledger.running_seconds(now + NS_PER_S // 2)
        assert ledger.running_now() == 0, "looked for again within the second"
        ledger.running_seconds(time.time_ns() + round(REOPEN_EVERY_S * NS_PER_S))
        assert ledger.running_now() == 1
