"""NamespaceThread and NamespaceReader in a real network namespace of this machine entered through /proc/PID, and
every collector that reads another namespace through one."""

import socket
import threading
from pathlib import Path

import pytest

from producers.collectors.namespace_thread import NamespaceReader, NamespaceThread
from producers.collectors.net_settings import NetSettingsCollector
from producers.collectors.qdisc import QdiscCollector
from tests.producers.collectors.namespace_hosts import veth_namespace

# Each collector that reads another namespace through a thread, and the thread's name.
NAMESPACE_COLLECTORS = {NetSettingsCollector: "net-settings", QdiscCollector: "qdisc"}


class OpenedSocket:
    """A socket of the namespace it was made in, remembering the threads that opened and closed it."""

    def __init__(self):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.opened_on = threading.current_thread()
        self.closed_on: threading.Thread | None = None

    def close(self) -> None:
        self.socket.close()
        self.closed_on = threading.current_thread()


def interface_names(_: OpenedSocket) -> set[str]:
    return {name for _, name in socket.if_nameindex()}


@pytest.fixture
def namespace_host():
    with veth_namespace("rvt") as host:
        yield host


def test_reads_run_inside_the_namespace_with_what_was_opened_there(namespace_host):
    thread = NamespaceThread(Path(namespace_host.procfs) / "ns/net", "probe", OpenedSocket)
    try:
        assert thread.run(interface_names) == {"lo", namespace_host.inside}
        assert thread.run(lambda opened: opened) is thread.run(lambda opened: opened)
    finally:
        thread.close()
    assert namespace_host.outside in interface_names(OpenedSocket())


def test_close_closes_what_was_opened_on_its_thread_and_ends_it(namespace_host):
    thread = NamespaceThread(Path(namespace_host.procfs) / "ns/net", "probe", OpenedSocket)
    opened = thread.run(lambda opened: opened)
    thread.close()
    thread.close()
    assert opened.closed_on is opened.opened_on and opened.socket.fileno() == -1
    assert not opened.opened_on.is_alive()


def test_a_failure_to_open_inside_is_raised_by_every_read(namespace_host):
    def refused() -> OpenedSocket:
        raise PermissionError("refused")

    thread = NamespaceThread(Path(namespace_host.procfs) / "ns/net", "probe", refused)
    try:
        for _ in range(2):
            with pytest.raises(PermissionError, match="refused"):
                thread.run(interface_names)
    finally:
        thread.close()


def test_a_reader_enters_a_thread_only_for_a_root_with_ns_net(tmp_path, namespace_host):
    here = NamespaceReader(tmp_path, "probe", OpenedSocket)
    inside = NamespaceReader(Path(namespace_host.procfs), "probe", OpenedSocket)
    try:
        opened_here = here.run(lambda opened: opened)
        assert opened_here.opened_on is threading.current_thread() and here.run(lambda opened: opened) is opened_here
        assert namespace_host.outside in here.run(interface_names)
        assert inside.run(interface_names) == {"lo", namespace_host.inside}
    finally:
        here.close()
        inside.close()
    assert opened_here.socket.fileno() == -1


@pytest.mark.parametrize("collector_type", list(NAMESPACE_COLLECTORS))
def test_a_namespace_that_cannot_be_entered_leaves_the_collector_unavailable_with_the_reason(tmp_path, collector_type):
    (tmp_path / "ns").mkdir()
    (tmp_path / "ns/net").write_text("not a namespace")
    collector = collector_type(tmp_path)
    try:
        with pytest.raises(OSError, match="cannot enter the network namespace of .*ns/net"):
            collector.collect()
        assert not collector.available()
    finally:
        collector.close()


@pytest.mark.parametrize("collector_type", list(NAMESPACE_COLLECTORS))
def test_closing_the_collector_ends_its_thread_inside_the_namespace(namespace_host, collector_type):
    before = set(threading.enumerate())
    collector = collector_type(namespace_host.procfs)
    collector.collect()
    started = set(threading.enumerate()) - before
    assert [thread.name.split("_")[0] for thread in started] == [NAMESPACE_COLLECTORS[collector_type]]
    collector.close()
    assert not any(thread.is_alive() for thread in started)
