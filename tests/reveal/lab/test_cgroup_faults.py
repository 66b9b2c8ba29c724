"""What of the lab's cgroup faults works without root: the counters they are measured by, a process's CPU and a
host's cgroup's written bytes in either layout."""

import subprocess
import sys
import time

from reveal.lab.cgroup_faults import host_written_bytes, process_cpu_s
from tests.reveal.lab.test_faults import lab_host


def test_a_process_cpu_is_counted_while_it_runs_and_zero_once_gone():
    busy = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 0.5\nwhile time.time() < end: pass"])
    time.sleep(0.4)
    assert process_cpu_s(busy) >= 0.1
    busy.wait()
    assert process_cpu_s(busy) == 0.0


def test_written_bytes_are_summed_over_the_cgroups_disks_in_either_layout(tmp_path):
    unified = lab_host(tmp_path / "v2")
    (tmp_path / "v2/reveal-lab/t1/h1/job/io.stat").write_text(
        "8:0 rbytes=4096 wbytes=1048576 rios=1 wios=16\n259:0 rbytes=0 wbytes=4096 rios=0 wios=1\n")
    assert host_written_bytes(unified) == 1048576 + 4096
    legacy = lab_host(tmp_path / "v1", unified=False)
    (tmp_path / "v1/blkio/reveal-lab/t1/h1/job/blkio.throttle.io_service_bytes").write_text(
        "8:0 Read 4096\n8:0 Write 2048\n8:0 Total 6144\n259:0 Write 1024\nTotal 7168\n")
    assert host_written_bytes(legacy) == 2048 + 1024
