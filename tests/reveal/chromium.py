"""Headless Chromium for the tests of the report and the live page: the browser run on a page, and a screenshot's
facts."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest


def chromium_binary() -> str:
    """Headless Chromium; its absence fails the test (bash .ci/run installs it)."""
    found = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                  if shutil.which(name)), None)
    if not found:
        pytest.fail("headless Chromium is not installed (apt-get install -y chromium; bash .ci/run does)")
    return found


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def png_facts(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values in the decompressed image data."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if kind == b"IDAT":
            chunks.append(data[offset + 8:offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))
