"""`reveal detect` on synthetic ML-like telemetry with one fault of each kind planted: every kind is found and
named, and the clean stretches stay (almost) silent."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from stream_jobs.offline.planted import FAULT_KINDS, plan, planted_rows

HOSTS = ["n1", "n2", "n3", "n4"]
T0 = 1_750_000_000.0
GRACE_S = 10.0
CLEAN_FLAGGED_LIMIT = 0.002


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("planted")
    faults = plan(HOSTS, lead_in_s=300.0, fault_s=60.0, gap_s=120.0)
    pd.DataFrame(planted_rows(HOSTS, 900.0, 0.1, 1, T0 - 1000.0, [])).to_csv(folder / "clean.csv", index=False)
    duration = faults[-1].end_s + 120.0
    pd.DataFrame(planted_rows(HOSTS, duration, 0.1, 2, T0, faults)).to_csv(folder / "run.csv", index=False)
    done = subprocess.run([sys.executable, "-m", "reveal.cli", "detect", "--input", str(folder / "run.csv"),
                           "--baseline", str(folder / "clean.csv"), "--output", str(folder / "out.csv")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    windows = pd.read_csv(folder / "out.csv")
    origin = pd.Timestamp(T0, unit="s", tz="UTC")
    windows["start_s"] = (pd.to_datetime(windows.window_start) - origin).dt.total_seconds()
    windows["end_s"] = (pd.to_datetime(windows.window_end) - origin).dt.total_seconds()
    return faults, windows


def _during(windows, fault):
    return (windows.host == fault.host) & (windows.end_s > fault.start_s) & (windows.start_s < fault.end_s + GRACE_S)


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_planted_fault_is_found_and_its_first_claim_names_a_changed_column(judged, kind):
    faults, windows = judged
    fault = next(f for f in faults if f.kind == kind)
    flagged = windows[_during(windows, fault) & (windows.flagged == 1)].sort_values("end_s")
    assert len(flagged) >= 5, f"{kind} on {fault.host} was not found"
    first_claim = flagged.claim.iloc[0]
    assert any(column in first_claim for column in fault.columns), first_claim
    if kind != "slow_drift":
        assert flagged.end_s.iloc[0] - fault.start_s <= 8.0, "found within seconds of its start"


def test_clean_windows_are_almost_never_flagged(judged):
    faults, windows = judged
    touched = np.zeros(len(windows), dtype=bool)
    for fault in faults:
        touched |= _during(windows, fault).to_numpy()
    clean = windows[~touched]
    assert len(clean) > 4000
    assert (clean.flagged == 1).mean() < CLEAN_FLAGGED_LIMIT, clean[clean.flagged == 1].claim.head().tolist()


def test_a_step_on_one_host_leaves_its_peers_unflagged(judged):
    faults, windows = judged
    step = next(f for f in faults if f.kind == "host_step")
    peers = windows[(windows.host != step.host) & (windows.end_s > step.start_s) & (windows.start_s < step.end_s)]
    assert len(peers) > 100 and (peers.flagged == 0).all()
