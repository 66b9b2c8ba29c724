import json
import subprocess
import sys

import numpy as np
import pytest

from stream_jobs.engine.detectors import IsolationForestDetector, MahalanobisPCADetector, ZScoreDetector
from stream_jobs.engine.ensemble import LONE_DETECTOR_MARGIN, DetectorEnsemble, EnsembleVerdict, out_of_fold_scores

NAMES = ("zscore", "mahalanobis", "isolation_forest")


def windows(seed, count=300, features=40):
    """Gaussian features around 50 ± 5; features 0 and 1 move together (correlation 0.995)."""
    unit = np.random.default_rng(seed).normal(size=(count, features))
    unit[:, 1] = 0.995 * unit[:, 0] + np.sqrt(1 - 0.995 ** 2) * unit[:, 1]
    return 50.0 + 5.0 * unit


def shifted(seed, count=100):
    data = windows(seed, count)
    data[:, [5, 12, 17, 25, 30]] += 6 * 5.0
    return data


def broken_correlation(seed, count=100):
    """Features 0 and 1 at +2.5σ and −2.5σ: each inside its baseline range, together far outside their pattern."""
    data = windows(seed, count)
    data[:, 0], data[:, 1] = 62.5, 37.5
    return data


@pytest.fixture(scope="module")
def calibrated():
    return DetectorEnsemble(mode="calibrated").fit(windows(0))


def flagged_share(verdicts, name=None):
    return float(np.mean([v.flagged if name is None else name in v.flagged_by for v in verdicts]))


def test_default_ensemble_is_the_papers_three_detectors():
    assert DetectorEnsemble().names == NAMES


def test_calibrated_mode_flags_almost_nothing_on_a_clean_run(calibrated):
    assert flagged_share(calibrated.judge(windows(1, 5000))) <= 1e-3


def test_calibrated_mode_flags_shifted_windows_by_agreement(calibrated):
    verdicts = calibrated.judge(shifted(2))
    assert flagged_share(verdicts) >= 0.95
    assert flagged_share(verdicts, "mahalanobis") == 1.0 and flagged_share(verdicts, "zscore") >= 0.5


def test_one_detector_far_past_its_threshold_is_enough(calibrated):
    baseline = windows(0)
    assert baseline[:, 0].max() > 62.5 and baseline[:, 1].min() < 37.5
    verdicts = calibrated.judge(broken_correlation(3))
    assert all(v.flagged and v.flagged_by == ("mahalanobis",) for v in verdicts)
    assert all(v.scores["mahalanobis"] >= LONE_DETECTOR_MARGIN * v.thresholds["mahalanobis"] for v in verdicts)


def test_one_detector_just_past_its_threshold_is_not_enough():
    ensemble = DetectorEnsemble(mode="calibrated").fit(windows(0))
    probe = windows(1, 50)
    ensemble.thresholds[0].threshold = 0.9 * ensemble.scores(probe)[:, 0].min()  # every window just past it
    verdicts = ensemble.judge(probe)
    assert all(v.flagged_by == ("zscore",) and not v.flagged for v in verdicts)


def test_verdict_carries_scores_thresholds_and_mean_severity(calibrated):
    verdict = calibrated.judge(shifted(4, count=1))[0]
    assert isinstance(verdict, EnsembleVerdict)
    assert tuple(verdict.scores) == tuple(verdict.thresholds) == NAMES
    ratios = [verdict.scores[n] / verdict.thresholds[n] for n in NAMES]
    assert verdict.severity == pytest.approx(np.mean(ratios))
    assert verdict.flagged_by == tuple(n for n in NAMES if verdict.scores[n] > verdict.thresholds[n])
    assert verdict.severity > calibrated.judge(windows(5, count=1))[0].severity


def test_calibrated_thresholds_stay_fixed_while_judging(calibrated):
    before = [t.threshold for t in calibrated.thresholds]
    calibrated.judge(shifted(6))
    assert [t.threshold for t in calibrated.thresholds] == before


def test_paper_mode_flags_about_one_percent_per_detector_and_two_must_agree():
    ensemble = DetectorEnsemble(mode="paper").fit(windows(0))
    verdicts = ensemble.judge(windows(1, 3000))
    for name in NAMES:
        assert 0.002 <= flagged_share(verdicts, name) <= 0.03
    assert flagged_share(verdicts) <= 0.02
    assert all(v.flagged == (len(v.flagged_by) >= 2) for v in verdicts)


def test_paper_thresholds_are_the_top_percent_of_the_baseline_and_stay_fixed():
    ensemble = DetectorEnsemble(mode="paper").fit(windows(0))
    before = [t.threshold for t in ensemble.thresholds]
    assert ensemble.judge(shifted(6, count=50))[0].flagged
    assert [t.threshold for t in ensemble.thresholds] == before


@pytest.mark.parametrize("mode", ["calibrated", "paper"])
def test_restored_ensemble_judges_as_the_original_would(mode):
    ensemble = DetectorEnsemble(mode=mode).fit(windows(0))
    ensemble.judge(windows(1, 50))
    restored = DetectorEnsemble.from_state(json.loads(json.dumps(ensemble.state(), allow_nan=False)))
    probe = np.vstack([windows(7, 100), shifted(8, 10)])
    assert restored.judge(probe) == ensemble.judge(probe)


def test_refit_learns_the_new_baseline():
    ensemble = DetectorEnsemble().fit(windows(0))
    assert flagged_share(ensemble.judge(shifted(2))) >= 0.95
    ensemble.refit(shifted(9, count=300))
    assert flagged_share(ensemble.judge(shifted(2))) <= 0.01


def test_calibration_scores_each_block_with_detectors_that_never_saw_it():
    baseline = windows(0)
    detector = MahalanobisPCADetector()
    held_out = out_of_fold_scores(detector, baseline, folds=5)
    in_sample = MahalanobisPCADetector().fit(baseline).score(baseline)
    assert not detector.fitted and held_out.shape == (300,)
    assert np.mean(held_out) > np.mean(in_sample)
    np.testing.assert_array_equal(out_of_fold_scores(ZScoreDetector(), baseline[:6], folds=5),
                                  ZScoreDetector().fit(baseline[:6]).score(baseline[:6]))


class NearestTrainedWindow:
    """Scores each window by how many windows away the nearest window it was fitted on lies (feature 0: the index)."""

    name = "nearest"

    def fit(self, baseline):
        self.trained = baseline[:, 0]
        return self

    def score(self, windows):
        return np.abs(windows[:, :1] - self.trained[None, :]).min(axis=1)


def test_calibration_leaves_out_the_windows_that_overlap_a_block():
    baseline = np.arange(100.0)[:, None]
    assert out_of_fold_scores(NearestTrainedWindow(), baseline, folds=5).min() == 1
    assert out_of_fold_scores(NearestTrainedWindow(), baseline, folds=5, gap=11).min() == 12
    in_sample = out_of_fold_scores(NearestTrainedWindow(), baseline[:30], folds=2, gap=14)  # too few left to fit on
    np.testing.assert_array_equal(in_sample, np.zeros(30))


def test_paper_mode_judges_with_the_trio_as_the_paper_writes_it():
    zscore, mahalanobis, _ = DetectorEnsemble(mode="paper").detectors
    assert zscore.cap == np.inf and not mahalanobis.minor_components and mahalanobis.cap == np.inf
    zscore, mahalanobis, _ = DetectorEnsemble(mode="calibrated").detectors
    assert zscore.cap < np.inf and mahalanobis.minor_components


def test_ensemble_accepts_any_detectors_with_the_interface():
    ensemble = DetectorEnsemble([ZScoreDetector(), IsolationForestDetector(seed=3)], min_agreement=1)
    verdicts = ensemble.fit(windows(0)).judge(shifted(2, count=5))
    assert ensemble.names == ("zscore", "isolation_forest") and all(v.flagged for v in verdicts)


def test_misconfiguration_and_use_before_fit_are_refused():
    with pytest.raises(ValueError, match="mode"):
        DetectorEnsemble(mode="vote")
    with pytest.raises(ValueError, match="each name once"):
        DetectorEnsemble([ZScoreDetector(), ZScoreDetector()])
    with pytest.raises(ValueError, match="min_agreement"):
        DetectorEnsemble(min_agreement=0)
    with pytest.raises(RuntimeError, match="before fit"):
        DetectorEnsemble().judge(windows(1, 2))


def test_loading_fitting_up_front_loads_what_a_first_fit_would():
    script = ("import sys\nfrom stream_jobs.engine.ensemble import load_fitting\n"
              "assert 'scipy.optimize' not in sys.modules, 'importing the engine loads no tail fit'\n"
              "load_fitting()\nassert 'scipy.optimize' in sys.modules and 'scipy.stats' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_scores_a_caller_already_has_are_taken_as_they_are(calibrated):
    """The pipeline computes the z-scores once, for the verdict and for attribution: the verdict is the same as the
    ensemble's own, and a score handed in is the one judged."""
    judged = shifted(9, count=20)
    zscore = calibrated.detectors[NAMES.index("zscore")]
    known = {"zscore": zscore.score_of_z(zscore.z(judged))}
    assert calibrated.judge(judged, known) == calibrated.judge(judged)
    np.testing.assert_array_equal(known["zscore"], zscore.score(judged))
    silenced = calibrated.scores(judged, {"zscore": np.zeros(len(judged))})
    assert (silenced[:, NAMES.index("zscore")] == 0).all()
    np.testing.assert_array_equal(silenced[:, 1:], calibrated.scores(judged)[:, 1:])


def test_trailing_thresholds_hold_the_calibrated_ones_on_a_clean_run():
    ensemble = DetectorEnsemble(mode="calibrated", min_agreement=1, trailing_windows=500).fit(windows(0))
    calibrated = [threshold.threshold for threshold in ensemble.thresholds]
    verdicts = ensemble.judge(windows(1, 200))
    assert all(list(v.thresholds.values()) == calibrated for v in verdicts)


def test_a_host_whose_level_moved_for_good_is_found_then_no_longer_flagged():
    ensemble = DetectorEnsemble(mode="calibrated", min_agreement=1, trailing_windows=500).fit(windows(0))
    flags = [v.flagged for v in ensemble.judge(shifted(1, 200))]
    assert all(flags[:3]), "the move was not found"
    assert np.mean(flags[100:]) <= 0.05, "a host whose level moved stays flagged"


@pytest.mark.parametrize("mode", ["calibrated"])
def test_a_restored_trailing_ensemble_judges_as_the_original_would(mode):
    original = DetectorEnsemble(mode=mode, min_agreement=1, trailing_windows=300).fit(windows(0))
    original.judge(shifted(1, 5))
    restored = DetectorEnsemble.from_state(json.loads(json.dumps(original.state())))
    later = np.vstack([shifted(2, 10), windows(3, 10)])
    assert original.judge(later) == restored.judge(later)
