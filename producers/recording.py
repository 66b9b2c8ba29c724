"""Agent recordings: catalogs and frames in one Avro object container file, for offline detection and replays."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import fastavro

from schemas.codec import load_schema
from schemas.records import Catalog, Frame, decode_frame_record



def _recording_schema() -> dict:
    """recording.avsc with the catalog and frame schemas written out in full, as a container file needs them."""
    schema = load_schema("recording")
    schema["fields"][0]["type"] = [load_schema("catalog"), load_schema("frame")]
    return fastavro.parse_schema(schema)


RECORDING_SCHEMA = _recording_schema()


class RecordingWriter:
    """A FrameSink that appends every catalog and frame to an Avro file (deflate-compressed blocks)."""

    def __init__(self, path: str | Path, sync_every: int = 100):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "wb")
        self._writer = fastavro.write.Writer(self._handle, RECORDING_SCHEMA, codec="deflate",
                                             sync_interval=1 << 20, metadata={"reveal.format": "recording/1"})
        self.frames = 0
        self._sync_every = sync_every

    def on_catalog(self, catalog: Catalog) -> None:
        self._writer.write({"item": ("io.reveal.Catalog", catalog.to_record())})
        self._writer.flush()

    def on_frame(self, frame: Frame) -> None:
        self._writer.write({"item": ("io.reveal.Frame", frame.to_record())})
        self.frames += 1
        if self.frames % self._sync_every == 0:
            self._writer.flush()  # a block every few seconds: an interrupted recording keeps what it had

    def end_block(self) -> None:
        """Frames are written one by one; the file's blocks follow its own sync interval."""

    def close(self) -> None:
        self._writer.flush()
        self._handle.close()


def read_recording(path: str | Path) -> Iterator[Catalog | Frame]:
    """The catalogs and frames of a recording, in the order they were recorded."""
    with open(path, "rb") as handle:
        for entry in fastavro.reader(handle, return_record_name=True):
            name, record = entry["item"]
            yield Catalog.from_record(record) if name == "io.reveal.Catalog" else decode_frame_record(record)
