"""One BLAS thread per Reveal process.

The engine's matrices are small: a rolling baseline of 32 windows × 6,291 features gives a 32 × 32 Gram matrix and
its eigenvectors. OpenBLAS spreads each such product over every core and then spins waiting for its threads, which
costs more than the product, most of all on a worker whose cores are busy with its event loop, its embedded
ClickHouse and other workers: refitting a host's Mahalanobis detector took 30 ms with OpenBLAS's own threads and
2.5 ms with one, on a 2-core VM running a worker of 150 hosts. Reveal's parallelism is processes (workers, `--jobs`).
"""

from __future__ import annotations

import os

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_blas_threads(environment: dict[str, str] | None = None) -> bool:
    """One thread for the BLAS libraries loaded now (through threadpoolctl) and for those loaded later or in child
    processes (through the environment), unless the environment already sets a count: an operator's choice stands.
    Returns whether the limit was applied."""
    environment = os.environ if environment is None else environment
    if any(variable in environment for variable in BLAS_THREAD_VARIABLES):
        return False
    for variable in BLAS_THREAD_VARIABLES:
        environment[variable] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
    return True
