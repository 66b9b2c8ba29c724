"""ML-like workloads for the lab's emulated hosts: data-parallel training with a ring allreduce over TCP (`train`),
an inference request loop with periodic bursts (`infer`) and an input pipeline that reads from storage (`input`).

Each alternates phases periodically, as ML jobs do (paper §3), is bounded by --duration, stops cleanly on SIGTERM or
SIGINT, talks only to the addresses on its command line and writes one JSON line per step or request. Run
`python -m reveal.lab.workloads KIND --help` for the options.
"""

import os

# One BLAS thread per process, like one accelerator per host: the lab packs several hosts onto a couple of cores,
# and OpenBLAS would otherwise spread each matmul over all of them and spin between calls. Set before numpy loads.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from reveal.lab.workloads.cli import build_parser, main, settings_from
from reveal.lab.workloads.common import MIB, Endpoint, JsonLines, MatmulWork, Stop
from reveal.lab.workloads.errors import (PeerClosed, PeerTimeout, PeerUnreachable, ProtocolError, Stopped,
                                              WorkloadError)
from reveal.lab.workloads.infer import ClientSettings, ServeSettings, request_rate, run_client, run_serve
from reveal.lab.workloads.input_pipeline import InputSettings, ensure_files, epoch_order, read_uncached, run_input
from reveal.lab.workloads.ring import RingLinks, connect_ring, ring_allreduce
from reveal.lab.workloads.train import TrainSettings, run_train, write_checkpoint
from reveal.lab.workloads.transport import connect_with_retry, listen, recv_exactly

__all__ = [
    "MIB", "ClientSettings", "Endpoint", "InputSettings", "JsonLines", "MatmulWork", "PeerClosed", "PeerTimeout",
    "PeerUnreachable", "ProtocolError", "RingLinks", "ServeSettings", "Stop", "Stopped", "TrainSettings",
    "WorkloadError", "build_parser", "connect_ring", "connect_with_retry", "ensure_files", "epoch_order", "listen", "main",
    "read_uncached", "recv_exactly", "request_rate", "ring_allreduce", "run_client", "run_input", "run_serve",
    "run_train", "settings_from", "write_checkpoint",
]
