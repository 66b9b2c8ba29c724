"""`reveal collect`: a recording of only the sources asked for, a closing line that tells what it holds, and one of
this host with every source."""

import re
import subprocess
import sys

from producers.recording import read_recording
from schemas.records import Catalog, Frame


def test_the_closing_line_tells_the_frames_and_channels_recorded(tmp_path):
    out = tmp_path / "network.avro"
    result = subprocess.run([sys.executable, "-m", "reveal.cli", "collect", "--duration", "1.5", "--sources", "network",
                             "--host", "collected-host", "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    told = re.fullmatch(r"recorded (\d+) frames of (\d+) channels to (.+) \((\d+) ticks skipped\)",
                        result.stdout.strip().splitlines()[-1])
    assert told and told.group(3) == str(out), result.stdout
    items = list(read_recording(out))
    catalogs, frames = [i for i in items if isinstance(i, Catalog)], [i for i in items if isinstance(i, Frame)]
    assert len(frames) == int(told.group(1)) >= 5 and len(catalogs[-1].channels) == int(told.group(2))
    assert {f.host for f in frames} == {"collected-host"}
    assert {c.subsystem for c in catalogs[-1].channels} <= {"network", "agent"}


def test_reveal_collect_records_this_host(tmp_path):
    out = tmp_path / "host.avro"
    result = subprocess.run([sys.executable, "-m", "reveal.cli", "collect", "--duration", "2", "--interval",
                             "0.1", "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    items = list(read_recording(out))
    catalog, frames = items[0], items[1:]
    assert isinstance(catalog, Catalog) and len(catalog.channels) > 300
    assert len(frames) >= 15 and [f.sequence for f in frames] == list(range(len(frames)))
    assert all(len(f.values) == len(catalog.channels) for f in frames)
