"""A column's wander: independent noise is allowed its own noise, a random walk what it moves over the horizon,
and trimming blanks only the extremes."""

import numpy as np

from stream_jobs.engine.wander import trimmed, wander


def test_a_random_walk_is_allowed_more_than_noise_of_the_same_step():
    rng = np.random.default_rng(0)
    steps = rng.normal(size=(4000, 1))
    noise, walk = wander(steps, 400), wander(np.cumsum(steps, axis=0), 400)
    assert 0.5 < noise[0] < 1.5 and walk[0] > 5 * noise[0]
    assert (wander(steps, 0) == 0).all()


def test_trimming_blanks_only_each_columns_extremes():
    stats = np.arange(100.0)[:, None] * np.array([[1.0, -1.0]])
    kept = trimmed(stats, 0.05)
    assert np.isnan(kept).sum(axis=0).tolist() == [10, 10] and kept[50].tolist() == [50.0, -50.0]
