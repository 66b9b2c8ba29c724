"""What of the lab's hosts works without root: whole disks found in a sysfs tree, a host's cgroup files in either
layout, system commands that fail named, processes stopped (and killed when they ignore SIGTERM), one lab per slot,
and a bad run tag refused."""

import subprocess
import sys
import time

import pytest

from reveal.lab.hosts import LabCgroup, LabError, LabLock, LabNetwork, block_devices, run_command, stop_all


def test_whole_disks_are_found_and_loop_and_ram_devices_left_out(tmp_path):
    for name, dev in (("sda", "8:0"), ("nvme0n1", "259:0"), ("loop0", "7:0"), ("ram0", "1:0"), ("zram0", "252:0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "dev").write_text(dev + "\n")
    (tmp_path / "odd").mkdir()
    assert block_devices(tmp_path) == ["259:0", "8:0"]
    assert block_devices(tmp_path / "missing") == []


def test_a_hosts_cgroup_files_are_those_of_the_machines_layout(tmp_path):
    unified = tmp_path / "v2"
    (unified / "cgroup.controllers").parent.mkdir()
    (unified / "cgroup.controllers").write_text("cpu memory io\n")
    group = LabCgroup("reveal-lab/t1/h1", unified)
    group.create()
    (unified / "reveal-lab/t1/h1/job/cpu.max").write_text("max 100000\n")
    group.write("cpu.max", "20000 100000", "cpu.cfs_quota_us", "20000")
    assert group.unified and group.read("cpu.max", "cpu.cfs_quota_us") == "20000 100000"
    with pytest.raises(LabError, match="no cgroup file memory.high under reveal-lab/t1/h1"):
        group.write("memory.high", "1", "memory.limit_in_bytes", "1")
    legacy = tmp_path / "v1"
    for hierarchy in ("cpu", "memory"):
        (legacy / hierarchy).mkdir(parents=True)
    group = LabCgroup("reveal-lab/t1/h1", legacy)
    group.create()
    (legacy / "memory/reveal-lab/t1/h1/job/memory.limit_in_bytes").write_text("-1\n")
    group.write("memory.high", "1048576", "memory.limit_in_bytes", "1048576")
    assert not group.unified and group.read("memory.high", "memory.limit_in_bytes") == "1048576"
    with pytest.raises(LabError, match="no cgroup hierarchy"):
        LabCgroup("reveal-lab/t1/h1", tmp_path / "empty")


def test_a_failing_or_missing_command_is_named_with_what_it_said():
    assert run_command("true").returncode == 0
    assert run_command("false", check=False).returncode == 1
    with pytest.raises(LabError, match="`ls /no/such/path` failed: .*No such file"):
        run_command("ls", "/no/such/path")
    with pytest.raises(LabError, match="no-such-tool-here is not installed"):
        run_command("no-such-tool-here")


def test_processes_are_stopped_and_those_ignoring_sigterm_killed_after_the_grace():
    polite = subprocess.Popen(["sleep", "30"], start_new_session=True)
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); print('ready', flush=True); time.sleep(30)"],
                                stdout=subprocess.PIPE, start_new_session=True)
    assert stubborn.stdout.readline() == b"ready\n"
    started = time.monotonic()
    stop_all([polite, stubborn], grace_s=0.5)
    assert polite.returncode == -15 and stubborn.returncode == -9
    assert time.monotonic() - started < 5.0
    stubborn.stdout.close()


def test_a_lab_takes_one_slot_and_cleaning_up_is_refused_while_it_runs():
    with LabLock() as lock:
        assert lock.slot >= 0
        with pytest.raises(LabError, match="a lab is running on this machine"):
            LabLock(every_slot=True).__enter__()


def test_a_run_tag_must_be_short_letters_or_digits():
    for tag in ("run-1", "toolong7", ""):
        with pytest.raises(ValueError, match="must be 1–6 letters or digits"):
            LabNetwork(tag, ["h1"])
