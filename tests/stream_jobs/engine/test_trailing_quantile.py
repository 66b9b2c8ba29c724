import math

import numpy as np
import pytest

from stream_jobs.engine.trailing_quantile import TrailingQuantile


def trailing(span=1000, **kwargs):
    return TrailingQuantile(span, 0.99, anchor=0.0, scale=1.0, **kwargs)


def test_on_a_steady_stream_it_reads_the_quantile_of_what_it_saw():
    scores = np.abs(np.random.default_rng(0).normal(size=1000))
    value = trailing().extend(scores)
    assert np.quantile(scores, 0.99) * 0.97 <= value <= np.quantile(scores, 0.99)


def test_reads_are_the_same_after_the_scores_are_shifted_and_scaled_with_its_anchor_and_scale():
    scores = np.random.default_rng(1).gamma(2.0, 1.0, 2000)
    plain = trailing().extend(scores)
    moved = TrailingQuantile(1000, 0.99, anchor=-50.0, scale=1e6).extend(-50.0 + 1e6 * scores)
    assert moved == pytest.approx(-50.0 + 1e6 * plain, rel=1e-9)


def test_a_new_level_becomes_the_norm_after_about_one_percent_of_the_span():
    quantile = trailing()
    quantile.extend(np.random.default_rng(2).uniform(0.0, 1.0, 1000))
    held = [quantile.add(5.0) for _ in range(30)]
    assert held[0] < 1.0 and held[5] < 1.0, "a new level was the norm at once"
    assert held[-1] == pytest.approx(5.0, rel=0.02), "a level held for 3 % of the span was never adopted"


def test_scores_older_than_the_span_are_forgotten():
    quantile = trailing(span=400, blocks=4)
    quantile.extend(np.full(400, 10.0))
    quantile.extend(np.random.default_rng(3).uniform(0.0, 1.0, 600))
    assert quantile.value < 1.0


def test_scores_below_the_anchor_count_but_read_as_the_anchor():
    quantile = TrailingQuantile(100, 0.99, anchor=5.0, scale=1.0)
    assert quantile.extend(np.linspace(0.0, 4.0, 100)) == 5.0


def test_a_quantile_beyond_the_binned_range_is_unbounded():
    assert math.isinf(trailing().extend(np.full(50, 1e12)))


def test_nan_scores_are_skipped():
    quantile = trailing()
    quantile.extend(np.full(100, 0.5))
    assert quantile.add(float("nan")) == quantile.value
    assert int(quantile.total.sum()) == 100


def test_a_restored_quantile_reads_and_goes_on_as_the_original():
    rng = np.random.default_rng(4)
    original = trailing(span=300)
    original.extend(rng.exponential(size=700))
    restored = TrailingQuantile.from_state(original.state())
    later = rng.exponential(size=400) * 3
    assert [original.add(s) for s in later] == [restored.add(s) for s in later]


def test_memory_does_not_grow_with_the_span():
    assert trailing(span=604_800).counts.nbytes == trailing(span=2_016).counts.nbytes < 64 * 1024


@pytest.mark.parametrize("bad", [{"span": 0}, {"quantile": 1.0}, {"scale": 0.0}, {"resolution": 0.0}, {"blocks": 0}])
def test_misconfiguration_is_refused(bad):
    settings = {"span": 10, "quantile": 0.99, "anchor": 0.0, "scale": 1.0, "resolution": 0.01, "blocks": 4, **bad}
    with pytest.raises(ValueError):
        TrailingQuantile(**settings)


def test_the_quantile_followed_score_by_score_is_the_one_read_from_all_counts():
    quantile = trailing(span=300, blocks=3)
    rng = np.random.default_rng(5)
    for score in np.concatenate([rng.exponential(size=400), 4 + rng.exponential(size=300), rng.normal(size=300)]):
        followed = quantile.add(float(score))
        cumulative = np.cumsum(quantile.total)
        index = int(np.searchsorted(cumulative, 0.99 * cumulative[-1], side="right"))
        assert followed == quantile._edge(index)
