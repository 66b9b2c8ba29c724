"""perf_event_open(2) through ctypes: the attribute struct's layout and the real syscall's reads and refusals."""

import ctypes
import errno
import os
import time

import pytest

from producers.collectors.perf_events import SOFTWARE_EVENTS, PerfEvent
from producers.collectors.perf_syscall import PERF_ATTR_SIZE_VER5, PERF_FLAG_FD_CLOEXEC, PerfEventAttr, PerfEventOpener


def test_attr_struct_has_the_kernel_layout():
    assert ctypes.sizeof(PerfEventAttr) == PERF_ATTR_SIZE_VER5 == 112
    assert (PerfEventAttr.read_format.offset, PerfEventAttr.config1.offset, PerfEventAttr.clockid.offset,
            PerfEventAttr.sample_max_stack.offset) == (32, 56, 92, 108)
    attr = PerfEventOpener().attr(PerfEvent("cycles", 0, 0))
    assert (attr.size, attr.read_format, attr.flags) == (112, 3, 0)
    assert PERF_FLAG_FD_CLOEXEC == 8


def refused_by_policy(error: OSError) -> bool:
    """True for the documented refusals (paranoid level, seccomp), which end the test there; anything else is a
    broken syscall path and fails it."""
    if error.errno not in (errno.EACCES, errno.EPERM):
        raise error
    paranoid = open("/proc/sys/kernel/perf_event_paranoid").read().strip()
    reason = (f"the kernel refuses CPU-wide perf events to this process ({errno.errorcode[error.errno]}; "
              f"perf_event_paranoid is {paranoid}, uid {os.geteuid()}; a seccomp profile gives EPERM): {error}")
    print(reason)
    return True


def test_real_opener_reads_value_enabled_and_running_times():
    opener = PerfEventOpener()
    try:
        fd = opener.open(SOFTWARE_EVENTS[1], 0)  # context-switches on cpu0
    except OSError as error:
        assert refused_by_policy(error)
        return
    try:
        time.sleep(0.01)
        value, enabled, running = opener.read(fd)
    finally:
        opener.close(fd)
    assert enabled >= running > 0 and value >= 0


def test_unknown_machine_is_a_refusal_that_fails_the_real_tests_rather_than_skipping_them():
    with pytest.raises(OSError) as raised:
        PerfEventOpener(machine="sparc64").open(SOFTWARE_EVENTS[0], 0)
    assert raised.value.errno == errno.ENOSYS
    with pytest.raises(OSError):
        refused_by_policy(raised.value)
