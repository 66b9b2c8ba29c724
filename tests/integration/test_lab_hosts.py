"""The lab's emulated hosts and faults on the real kernel: namespaces that talk over the bridge, faults that show in
each host's own counters, and nothing left behind. Needs root, iproute2 and nftables, as `bash .ci/run` provides."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from reveal.lab.fault_kinds import make_fault
from reveal.lab.faults import FaultSpec
from reveal.lab.hosts import LabLock, LabNetwork, remove_leftovers, run_command

# Labs take numbered slots of this host's network and cgroups: one lab test at a time
pytestmark = pytest.mark.quiet_host

MISSING = [tool for tool in ("ip", "nft") if shutil.which(tool) is None]


@pytest.fixture(scope="module", autouse=True)
def lab_machine():
    """Root and the lab's tools, or a failure naming what is missing (never a skip)."""
    if os.geteuid() != 0 or MISSING:
        pytest.fail(f"the lab needs root and {', '.join(MISSING) or 'iproute2 and nftables'} "
                    "(bash .ci/run installs nftables)")


def _namespaces() -> list[str]:
    return run_command("ip", "netns", "list").stdout.split()


def _tcp_counter(host, name: str) -> int:
    lines = [line.split() for line in open(f"{host.net_procfs}/net/snmp") if line.startswith("Tcp:")]
    return int(lines[1][lines[0].index(name)])


def _stream(sender, receiver, seconds: float) -> None:
    """Send bulk TCP from sender to receiver for a while, through their namespaces and the bridge."""
    server = receiver.spawn([sys.executable, "-c",
                             "import socket; s = socket.socket(); s.bind(('0.0.0.0', 5001)); s.listen()\n"
                             "c, _ = s.accept()\nwhile c.recv(1 << 16): pass"])
    time.sleep(0.5)
    client = sender.spawn([sys.executable, "-c",
                           f"import socket, time; c = socket.create_connection(({receiver.address!r}, 5001), 5)\n"
                           f"end = time.time() + {seconds}\nwhile time.time() < end: c.sendall(b'x' * 65536)"])
    client.wait(seconds + 10)
    server.terminate()


def test_hosts_talk_over_the_bridge_and_leave_nothing_behind():
    with LabNetwork("ta", ["h1", "h2"]) as network:
        h1, h2 = network.hosts["h1"], network.hosts["h2"]
        before = _tcp_counter(h2, "OutSegs")
        _stream(h2, h1, 1.0)
        assert _tcp_counter(h2, "OutSegs") - before > 100
        assert _tcp_counter(h1, "OutSegs") < _tcp_counter(h2, "OutSegs")  # each host keeps its own counters
        cgroups = [d for d in h1.cgroup.directories]
        assert all(d.is_dir() for d in cgroups)
    assert not [n for n in _namespaces() if n.startswith("rvl-ta-")]
    assert not any(d.exists() for d in cgroups)


def test_packet_loss_in_flight_makes_the_faulted_host_retransmit_and_is_measured(tmp_path):
    with LabNetwork("tb", ["h1", "h2"]) as network:
        h1, h2 = network.hosts["h1"], network.hosts["h2"]
        fault = make_fault(FaultSpec("packet_loss", "h2", 0, 5, 0.01), network.hosts, tmp_path)
        fault.start()
        before = _tcp_counter(h2, "RetransSegs")
        _stream(h2, h1, 2.0)
        retransmitted = _tcp_counter(h2, "RetransSegs") - before
        effect = fault.stop()
        rules = run_command("nft", "list", "tables").stdout
    assert retransmitted > 10
    assert effect.took_effect and effect.measured["packets_dropped"] > 10
    assert effect.measured["retransmitted_segments"] >= retransmitted
    drops = [count for _, count in effect.drops_timeline]
    assert drops == sorted(drops) and drops[-1] == effect.measured["packets_dropped"]
    assert f"reveal_loss_{h2.veth}" not in rules


def test_each_lab_takes_its_own_subnet():
    with LabNetwork("tf", ["h1"]) as first, LabNetwork("tg", ["h1"]) as second:
        assert first.subnet != second.subnet
        assert first.hosts["h1"].address != second.hosts["h1"].address


def test_a_labs_cpu_weight_is_set_on_its_own_group():
    with LabNetwork("tj", ["h1"], cpu_shares=4096) as network:
        agents = network.agents
        weight = (agents.root / "cpu.weight" if agents.unified else agents.root / "cpu" / "cpu.shares").name
        group = agents.directories[0].parents[1]
        assert int((group / weight).read_text()) == (400 if agents.unified else 4096)


def test_storage_writes_show_in_the_hosts_own_io_counters(tmp_path):
    with LabNetwork("th", ["h1"]) as network:
        fault = make_fault(FaultSpec("storage_burst", "h1", 0, 2, 8), network.hosts, tmp_path)
        fault.start()
        time.sleep(2.0)
        effect = fault.stop()
    assert effect.took_effect, effect.measured
    assert effect.measured["bytes_written"] >= 8 << 20


@pytest.mark.parametrize("kind, magnitude", [("cpu_contention", 1), ("straggler", 0.2), ("memory_reservation", 64),
                                             ("memory_pressure", 64), ("irq_pressure", 5000),
                                             ("bandwidth_cap", 5)])
def test_every_fault_kind_measures_that_it_took_effect(tmp_path, kind, magnitude):
    with LabNetwork("ti", ["h1", "h2"]) as network:
        h1, h2 = network.hosts["h1"], network.hosts["h2"]
        busy = h1.spawn([sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"])
        fault = make_fault(FaultSpec(kind, "h1", 0, 3, magnitude), network.hosts, tmp_path)
        fault.start()
        if kind == "bandwidth_cap":
            _stream(h1, h2, 2.5)
        else:
            time.sleep(2.5)
        effect = fault.stop()
        busy.kill()
    assert effect.took_effect, effect.measured
    assert all(value >= 0 for value in effect.measured.values())


def test_cpu_contention_shows_in_the_hosts_cgroup_and_stops(tmp_path):
    with LabNetwork("tc", ["h1"]) as network:
        h1 = network.hosts["h1"]
        usage = lambda: _cpu_usage_s(h1)  # noqa: E731
        fault = make_fault(FaultSpec("cpu_contention", "h1", 0, 2, 1), network.hosts, tmp_path)
        start = usage()
        fault.start()
        time.sleep(2.0)
        busy = usage() - start
        effect = fault.stop()
        time.sleep(0.5)
        idle_start = usage()
        time.sleep(1.0)
        idle = usage() - idle_start
    assert busy > 0.8 and idle < 0.1
    assert effect.took_effect and effect.measured["cpu_seconds_taken"] > 0.8


def test_straggler_quota_is_set_and_lifted(tmp_path):
    with LabNetwork("td", ["h1"]) as network:
        h1 = network.hosts["h1"]
        fault = make_fault(FaultSpec("straggler", "h1", 0, 2, 0.2), network.hosts, tmp_path)
        fault.start()
        limited = h1.cgroup.read("cpu.max", "cpu.cfs_quota_us")
        fault.stop()
        lifted = h1.cgroup.read("cpu.max", "cpu.cfs_quota_us")
    assert limited.split()[0] == "20000"
    assert lifted.split()[0] in ("max", "-1")


def test_leftovers_of_an_interrupted_run_are_removed():
    network = LabNetwork("te", ["h1", "h2"])
    network.__enter__()  # as if the run were killed before its clean-up
    assert [n for n in _namespaces() if n.startswith("rvl-te-")]
    removed = remove_leftovers("te")
    assert any("rvl-te-h1" in line for line in removed)
    assert not [n for n in _namespaces() if n.startswith("rvl-te-")]
    assert not [d for d in network.hosts["h1"].cgroup.directories if d.parent.parent.exists()]
    assert "rvlbrte" not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout


def _cpu_usage_s(host) -> float:
    if host.cgroup.unified:
        stat = dict(line.split() for line in host.cgroup.read("cpu.stat", "cpu.stat").splitlines())
        return int(stat["usage_usec"]) / 1e6
    return int(host.cgroup.read("cpuacct.usage", "cpuacct.usage")) / 1e9


def test_an_interrupted_run_removes_its_hosts_and_processes(tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text('name = "tiny"\nhosts = ["h1", "h2"]\nworkloads = ["train"]\nduration_s = 60\n'
                        'baseline_s = 30\nwarmup_s = 2\n[[fault]]\nkind = "packet_loss"\nhost = "h2"\n'
                        'start_s = 35\nduration_s = 10\nmagnitude = 0.01\n')
    run = subprocess.Popen([sys.executable, "-m", "reveal.cli", "lab", "run", "--scenario", str(scenario),
                            "--embedded", "--out", str(tmp_path / "runs")], stderr=subprocess.PIPE, text=True)
    tag = ""
    for line in run.stderr:
        if "lab network rvlbr" in line:
            tag = line.split("lab network rvlbr", 1)[1].split(":", 1)[0]
        if "hosts up" in line:
            break
    time.sleep(3)
    run.terminate()
    run.communicate(timeout=60)
    assert run.returncode != 0 and tag
    assert not [n for n in _namespaces() if n.startswith(f"rvl-{tag}-")]
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout
    assert not leftover.strip(), f"workload processes left running: {leftover}"


def test_a_lab_removes_what_a_dead_lab_left_on_its_slot():
    with LabLock() as lock:
        slot = lock.slot
    bridge = "rvlbrdead"
    run_command("ip", "link", "add", bridge, "type", "bridge")
    run_command("ip", "addr", "add", f"10.251.{slot}.1/24", "dev", bridge)
    run_command("ip", "link", "set", bridge, "up")
    try:
        with LabNetwork("td", ["h1"]) as network:
            assert network.subnet == f"10.251.{slot}"
            links = run_command("ip", "-o", "link", "show").stdout
            assert f" {bridge}:" not in links
            route = run_command("ip", "route", "get", network.hosts["h1"].address).stdout
            assert network.bridge in route
    finally:
        run_command("ip", "link", "del", bridge, check=False)
