"""AperfMperfCollector over sparse msr device files built in a temporary /dev, and the TSC rate from cpuinfo."""

import math
import os

import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.msr import IA32_APERF, IA32_MPERF, AperfMperfCollector, tsc_mhz

XEON_CPUINFO = (b"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz\n"
                b"cpu MHz\t\t: 1199.874\n\nprocessor\t: 1\ncpu MHz\t\t: 3900.002\n")


def write_msr(path, aperf: int, mperf: int) -> tuple[float, float]:
    """A sparse file with MPERF at offset 0xE7 and APERF at 0xE8, and the (APERF, MPERF) a reader finds in it.

    The msr driver maps each offset to a whole register; in a plain file the two 8-byte values overlap by seven
    bytes, so APERF (written last) survives whole and MPERF keeps only its low byte under APERF's first seven.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.pwrite(fd, mperf.to_bytes(8, "little"), IA32_MPERF)
        os.pwrite(fd, aperf.to_bytes(8, "little"), IA32_APERF)
    finally:
        os.close(fd)
    return float(aperf), float(((aperf << 8) | (mperf & 0xFF)) & (2**64 - 1))


@pytest.fixture
def roots(tmp_path):
    devroot, procfs = tmp_path / "dev", tmp_path / "proc"
    for cpu in (0, 1, 2, 10):
        write_msr(devroot / f"cpu/{cpu}/msr", aperf=1_000_000 * (cpu + 1), mperf=2_000_000 * (cpu + 1))
    (devroot / "cpu/microcode").mkdir()
    procfs.mkdir()
    (procfs / "cpuinfo").write_bytes(XEON_CPUINFO)
    return devroot, procfs


def test_counters_per_cpu_in_cpu_number_order(roots):
    devroot, procfs = roots
    collector = AperfMperfCollector(procfs, devroot=devroot)
    values = collector.collect()
    assert list(values)[:3] == ["cpu.tsc_mhz", "cpu.aperf.cpu0", "cpu.mperf.cpu0"]
    assert list(values)[-2:] == ["cpu.aperf.cpu10", "cpu.mperf.cpu10"]
    aperf, mperf = write_msr(devroot / "cpu/2/msr", aperf=3_000_000, mperf=6_000_000)
    assert (values["cpu.aperf.cpu2"], values["cpu.mperf.cpu2"]) == (aperf, mperf) == (3e6, 768000128.0)
    assert values["cpu.tsc_mhz"] == 3000.0


def test_kinds_units_and_devices(roots):
    devroot, procfs = roots
    collector = AperfMperfCollector(procfs, devroot=devroot)
    collector.collect()
    aperf = collector.describe("cpu.aperf.cpu1")
    assert (aperf.subsystem, aperf.kind, aperf.unit, aperf.device) == ("cpu", "counter", "cycles", "cpu1")
    assert collector.describe("cpu.mperf.cpu1").kind == "counter"
    assert (collector.describe("cpu.tsc_mhz").kind, collector.describe("cpu.tsc_mhz").unit) == ("static", "MHz")


def test_each_register_is_read_at_its_own_offset(roots, monkeypatch):
    devroot, procfs = roots
    registers = {IA32_APERF: 2**63 + 12345, IA32_MPERF: 2**40}

    def msr_driver(fd, count, offset):
        return registers[offset].to_bytes(count, "little")

    monkeypatch.setattr("producers.collectors.msr.os.pread", msr_driver)
    values = AperfMperfCollector(procfs, devroot=devroot).collect()
    assert values["cpu.aperf.cpu10"] == float(2**63 + 12345) and values["cpu.mperf.cpu10"] == float(2**40)


def test_tsc_prefers_the_nominal_clock_of_the_model_name():
    assert tsc_mhz(XEON_CPUINFO) == 3000.0
    assert tsc_mhz(b"model name\t: AMD EPYC 7763 64-Core Processor\ncpu MHz\t\t: 2445.406\n") == 2445.406
    assert math.isnan(tsc_mhz(b"processor\t: 0\n"))


def test_missing_cpuinfo_costs_only_the_tsc_channel(roots, tmp_path):
    devroot, _ = roots
    values = AperfMperfCollector(tmp_path / "no-proc", devroot=devroot).collect()
    assert math.isnan(values["cpu.tsc_mhz"]) and values["cpu.aperf.cpu0"] == 1_000_000.0


def test_one_unreadable_cpu_costs_its_two_channels(roots):
    devroot, procfs = roots
    (devroot / "cpu/1/msr").unlink()
    (devroot / "cpu/1/msr").mkdir()  # pread fails with EISDIR, like an offline CPU's EIO
    write_msr(devroot / "cpu/2/msr", aperf=0, mperf=0)
    os.truncate(devroot / "cpu/2/msr", IA32_APERF + 4)  # a short read
    reading = AperfMperfCollector(procfs, devroot=devroot).read()
    nan = [name for name, value in zip(reading.names, reading.values) if math.isnan(value)]
    assert nan == ["cpu.aperf.cpu1", "cpu.mperf.cpu1", "cpu.aperf.cpu2", "cpu.mperf.cpu2"]


def test_without_msr_files_the_collector_is_unavailable_with_a_hint(tmp_path, roots):
    with pytest.raises(OSError, match="modprobe msr and run as root"):
        AperfMperfCollector(tmp_path, devroot=tmp_path / "empty").read()
    assert not AperfMperfCollector(tmp_path, devroot=tmp_path / "empty").available()
    devroot, procfs = roots
    for cpu in (0, 1, 2, 10):
        os.truncate(devroot / f"cpu/{cpu}/msr", 0)
    with pytest.raises(OSError, match="modprobe msr and run as root"):
        AperfMperfCollector(procfs, devroot=devroot).read()


def test_names_tuple_is_the_same_object_between_reads(roots):
    devroot, procfs = roots
    collector = AperfMperfCollector(procfs, devroot=devroot)
    assert collector.read().names is collector.read().names
    collector.close()


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64), st.integers(min_value=0, max_value=IA32_APERF + 16))
def test_garbage_in_one_msr_file_never_crashes_a_read(tmp_path_factory, garbage, offset):
    devroot = tmp_path_factory.mktemp("dev")
    expected = write_msr(devroot / "cpu/0/msr", aperf=5, mperf=7)
    write_msr(devroot / "cpu/1/msr", aperf=5, mperf=7)
    collector = AperfMperfCollector(devroot, devroot=devroot)
    before = collector.read()
    os.truncate(devroot / "cpu/1/msr", offset)
    with open(devroot / "cpu/1/msr", "r+b") as handle:
        handle.seek(offset)
        handle.write(garbage)
    after = collector.read()
    collector.close()
    assert after.names is before.names
    assert all(isinstance(v, float) for v in after.values) and tuple(after.values[1:3]) == expected
