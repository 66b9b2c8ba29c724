"""Reveal's own commands on a host: a command pointed at a run (`reveal sql`, `report`, `alerts` …) notes its process
in a folder every Reveal process on the host shares, from its start to its end, and the agent there reads the folder,
so that the engine can tell the load of Reveal's own commands from the host's.

A note is one small JSON file named after the process (pid and start): the command, when the process started (so its
interpreter's start-up counts) and, once it is over, when it ended and the CPU time it used. A command killed before it
could write its end is over when its process is gone, with the CPU time last read of it. Ended notes are pruned after
KEPT_AFTER_END_S by whoever can.
"""

from __future__ import annotations

import json
import os
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

COMMANDS_DIR_ENV = "REVEAL_COMMANDS_DIR"
DEFAULT_COMMANDS_DIR = "/tmp/reveal-commands"
KEPT_AFTER_END_S = 600.0
NS_PER_S = 1_000_000_000
# Every note is written by a rename in the folder, so an unchanged folder (its mtime) holds no new or updated note and
# is not read again, except this often (to prune ended notes) or this soon after it changed (a change within the
# same tick of the file system's clock leaves the mtime as it was).
RESCAN_EVERY_S = 10.0
UNSETTLED_S = 1.0
# A folder that could neither be found nor made is looked for again this often.
REOPEN_EVERY_S = 1.0
# The unit of CPU time in /proc/<pid>/stat and /proc/stat (USER_HZ)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def commands_folder() -> Path:
    """The host's folder of command notes: $REVEAL_COMMANDS_DIR, else /tmp/reveal-commands (every user's commands
    note themselves there, so it is world-writable with the sticky bit, as /tmp is)."""
    return Path(os.environ.get(COMMANDS_DIR_ENV) or DEFAULT_COMMANDS_DIR)


def process_start_ns(pid: int | str = "self", procfs: str | Path = "/proc") -> int | None:
    """When a process started, in epoch ns (boot time + its start in clock ticks); None when it cannot be read."""
    try:
        stat = Path(procfs, str(pid), "stat").read_text()
        start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        boot_s = next(int(line.split()[1]) for line in Path(procfs, "stat").read_text().splitlines()
                      if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot_s * NS_PER_S + start_ticks * NS_PER_S // CLOCK_TICKS


def process_memory_bytes(pid: int | str, procfs: str | Path = "/proc") -> tuple[float, float]:
    """A process's anonymous memory in use (RssAnon) and its private writable memory (VmData + VmStk: what it has
    committed), in bytes, from /proc/<pid>/status; (0, 0) when it cannot be read (a process that has ended)."""
    try:
        fields = dict(line.split(":", 1) for line in Path(procfs, str(pid), "status").read_text().splitlines()
                      if ":" in line)
        kib = lambda name: float(fields.get(name, "0 kB").split()[0]) * 1024  # noqa: E731
        return kib("RssAnon"), kib("VmData") + kib("VmStk")
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0


def process_cpu_ticks(pid: int | str, procfs: str | Path = "/proc") -> tuple[float, float] | None:
    """A process's CPU time so far, all its threads, in clock ticks: (user, system); None when it cannot be read."""
    try:
        stat = Path(procfs, str(pid), "stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        return float(fields[11]), float(fields[12])
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def noted_command(command: str, folder: Path | None = None) -> Iterator[Path | None]:
    """Note this process as Reveal's command `command` while the block runs. A host where the folder cannot be
    written loses only the note: the command itself runs as ever."""
    folder = commands_folder() if folder is None else folder
    start_ns = process_start_ns() or time.time_ns()
    note = folder / f"{os.getpid()}-{start_ns}.json"
    written = _write_note(note, {"pid": os.getpid(), "command": command, "start_ns": start_ns, "end_ns": None})
    try:
        yield note if written else None
    finally:
        if written:
            used = os.times()
            _write_note(note, {"pid": os.getpid(), "command": command, "start_ns": start_ns,
                               "end_ns": time.time_ns(), "cpu_ticks": [used.user * CLOCK_TICKS,
                                                                       used.system * CLOCK_TICKS]})


def _write_note(note: Path, content: dict) -> bool:
    try:
        _shared_folder(note.parent)
        partial = note.with_suffix(".part")
        partial.write_text(json.dumps(content))
        partial.replace(note)
    except OSError:
        return False
    return True


def _shared_folder(folder: Path) -> None:
    if folder.is_dir():
        return
    folder.mkdir(parents=True, exist_ok=True)
    try:
        folder.chmod(0o1777)
    except OSError:
        pass


@dataclass
class _Seen:
    start_ns: int
    end_ns: int | None
    pid: int
    mtime_ns: int
    cpu_ticks: tuple[float, float] = (0.0, 0.0)


class CommandLedger:
    """Reads a folder of command notes: how many seconds Reveal's commands have run on this host since the ledger
    began (a counter: commands that ran together count once each), how many run now, and the CPU time they used."""

    def __init__(self, folder: Path | None = None, procfs: str | Path = "/proc"):
        self.folder = commands_folder() if folder is None else Path(folder)
        self.procfs = Path(procfs)
        self._seen: dict[str, _Seen] = {}
        self._ended_s = 0.0
        self._ended_cpu_ticks = (0.0, 0.0)
        self._read_folder_at: tuple[int, int] | None = None  # (the folder's mtime, when it was read), both in ns
        self._folder_fd: int | None = None
        self._closer: weakref.finalize | None = None
        self._open_again_at_ns = 0

    def running_seconds(self, now_ns: int | None = None) -> float:
        """Seconds of commands run so far: those that ended, plus the elapsed time of those running now."""
        now_ns = time.time_ns() if now_ns is None else now_ns
        self._scan(now_ns)
        running = sum(max(0, now_ns - seen.start_ns) for seen in self._seen.values() if seen.end_ns is None)
        return self._ended_s + running / NS_PER_S

    def running_now(self) -> int:
        return sum(seen.end_ns is None for seen in self._seen.values())

    def memory_bytes(self) -> tuple[float, float]:
        """The anonymous and committed memory of the commands running now, as of the last scan (see
        process_memory_bytes)."""
        held = [process_memory_bytes(seen.pid, self.procfs) for seen in self._seen.values() if seen.end_ns is None]
        return sum(anon for anon, _ in held), sum(committed for _, committed in held)

    def cpu_ticks(self) -> tuple[float, float]:
        """CPU time (user, system) in clock ticks the commands seen since the ledger began have used so far, as of
        the last scan: a counter, like /proc/stat's."""
        user, system = self._ended_cpu_ticks
        for seen in self._seen.values():
            if seen.end_ns is None:
                seen.cpu_ticks = _later(seen.cpu_ticks, process_cpu_ticks(seen.pid, self.procfs))
                user, system = user + seen.cpu_ticks[0], system + seen.cpu_ticks[1]
        return user, system

    def _scan(self, now_ns: int) -> None:
        if not self._folder_unchanged(now_ns):
            self._read_folder(now_ns)
        for seen in self._seen.values():
            if seen.end_ns is None and not (self.procfs / str(seen.pid)).exists():
                self._end(seen, now_ns)

    def _folder_unchanged(self, now_ns: int) -> bool:
        """Whether the folder is as it was when last read, and settled: nothing in it needs reading now (also when
        there is no folder, so nothing to read)."""
        mtime_ns = self._folder_mtime_ns(now_ns)
        if mtime_ns is None:
            return True
        last = self._read_folder_at
        unchanged = last is not None and last[0] == mtime_ns and now_ns - last[1] < RESCAN_EVERY_S * NS_PER_S \
            and now_ns - mtime_ns > UNSETTLED_S * NS_PER_S
        if not unchanged:
            self._read_folder_at = (mtime_ns, now_ns)
        return unchanged

    def _folder_mtime_ns(self, now_ns: int) -> int | None:
        """The folder's mtime through a descriptor kept open (one fstat a tick, no path walk), the folder made as a
        command would make it when missing; None while it cannot be, tried again once a second."""
        if self._folder_fd is not None:
            status = os.fstat(self._folder_fd)
            if status.st_nlink:
                return status.st_mtime_ns
            self.close()  # removed (a /tmp cleaner): notes go to a new folder of that name
        if now_ns < self._open_again_at_ns:
            return None
        try:
            _shared_folder(self.folder)
            self._folder_fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self._open_again_at_ns = now_ns + REOPEN_EVERY_S * NS_PER_S
            return None
        self._closer = weakref.finalize(self, os.close, self._folder_fd)
        return os.fstat(self._folder_fd).st_mtime_ns

    def close(self) -> None:
        """Let go of the folder's descriptor."""
        if self._closer is not None:
            self._closer()
        self._folder_fd, self._closer = None, None

    def _read_folder(self, now_ns: int) -> None:
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            entries = []
        for entry in entries:
            if entry.name.endswith(".json"):
                self._read(entry, now_ns)

    def _read(self, entry: os.DirEntry, now_ns: int) -> None:
        try:
            mtime_ns = entry.stat().st_mtime_ns
        except OSError:
            return
        known = self._seen.get(entry.name)
        if known is not None and (known.end_ns is not None or known.mtime_ns == mtime_ns):
            self._prune(entry, known, now_ns)
            return
        try:
            note = json.loads(Path(entry.path).read_text())
            start_ns, pid, end_ns = int(note["start_ns"]), int(note["pid"]), note.get("end_ns")
            final_cpu = tuple(float(ticks) for ticks in note.get("cpu_ticks") or ())
        except (OSError, ValueError, KeyError, TypeError):
            return
        if known is None:
            known = self._seen[entry.name] = _Seen(start_ns, None, pid, mtime_ns)
            if end_ns is not None and now_ns - int(end_ns) > KEPT_AFTER_END_S * NS_PER_S:
                known.start_ns = int(end_ns)  # over long before this ledger began: nothing of it counts
        known.mtime_ns = mtime_ns
        if end_ns is not None:
            if known.start_ns == start_ns and len(final_cpu) == 2:
                known.cpu_ticks = _later(known.cpu_ticks, final_cpu)
            self._end(known, max(known.start_ns, int(end_ns)))

    def _end(self, seen: _Seen, end_ns: int) -> None:
        seen.end_ns = end_ns
        self._ended_s += max(0, end_ns - seen.start_ns) / NS_PER_S
        self._ended_cpu_ticks = (self._ended_cpu_ticks[0] + seen.cpu_ticks[0],
                                 self._ended_cpu_ticks[1] + seen.cpu_ticks[1])

    def _prune(self, entry: os.DirEntry, seen: _Seen, now_ns: int) -> None:
        if seen.end_ns is not None and now_ns - seen.end_ns > KEPT_AFTER_END_S * NS_PER_S:
            try:
                os.unlink(entry.path)
            except OSError:
                return
            del self._seen[entry.name]


def _later(known: tuple[float, float], read: tuple[float, ...] | None) -> tuple[float, float]:
    """A command's CPU time from a new reading, never below what was known (a counter only rises)."""
    if read is None:
        return known
    return max(known[0], read[0]), max(known[1], read[1])
