"""One BLAS thread per Reveal process, for the libraries already loaded and those loaded after, unless the
environment chose a count."""

import json
import os
import subprocess
import sys

from stream_jobs.blas_threads import BLAS_THREAD_VARIABLES, limit_blas_threads

_REPORT = ("import json, numpy; from threadpoolctl import threadpool_info; {before}"
           "import scipy.linalg; print(json.dumps([p['num_threads'] for p in threadpool_info() "
           "if p['user_api'] == 'blas']))")


def _blas_threads(code_before: str, environment: dict[str, str]) -> list[int]:
    done = subprocess.run([sys.executable, "-c", _REPORT.format(before=code_before)], env=environment,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def _environment(**extra) -> dict[str, str]:
    bare = {key: value for key, value in os.environ.items() if key not in BLAS_THREAD_VARIABLES}
    return {**bare, **extra}


def test_loaded_and_later_blas_libraries_run_one_thread_each():
    limited = _blas_threads("from stream_jobs.blas_threads import limit_blas_threads; limit_blas_threads(); ",
                            _environment())
    assert limited and set(limited) == {1}, limited


def test_a_count_the_environment_sets_is_left_to_it():
    environment = {"OPENBLAS_NUM_THREADS": "2"}
    assert limit_blas_threads(environment) is False and environment == {"OPENBLAS_NUM_THREADS": "2"}


def test_the_variables_are_set_for_child_processes():
    environment: dict[str, str] = {}
    assert limit_blas_threads(environment) is True
    assert environment == {variable: "1" for variable in BLAS_THREAD_VARIABLES}
