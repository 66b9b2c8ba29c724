"""Attribution: which metric–feature pairs drove a window, most first; the subsystem they point to; and the claim an
operator reads, with the kind of change in words that match its direction."""

import numpy as np

from stream_jobs.engine.attribution import (Contribution, claim, ranked_contributions, split_feature_name,
                                            strongest_contributions)


def test_a_feature_name_splits_at_its_last_colon():
    assert split_feature_name("cpu.user.cpu0:mean") == ("cpu.user.cpu0", "mean")
    assert split_feature_name("ib:mlx5_0:std") == ("ib:mlx5_0", "std")


def test_contributions_are_ranked_by_weight_and_those_without_any_are_left_out():
    names = ["a:mean", "b:std", "c:max", "d:mean"]
    weights, z = np.array([0.5, -3.0, 0.0, np.nan]), np.array([1.0, -4.0, 0.0, 2.0])
    features, means, scales = np.array([10.0, 20.0, 30.0, 40.0]), np.array([9.0, 25.0, 30.0, 38.0]), np.ones(4)
    ranked = ranked_contributions(weights, z, features, means, scales, names, limit=3)
    assert ranked == [Contribution("b", "std", 20.0, 25.0, 1.0, -4.0), Contribution("a", "mean", 10.0, 9.0, 1.0, 1.0)]
    assert ranked_contributions(weights, z, features, means, scales, names, limit=1) == ranked[:1]


def test_contributions_named_by_index_rank_as_named_by_string_and_an_infinite_weight_comes_first():
    names = [("a", "mean"), ("b", "std"), ("c", "max"), ("d", "mean")]
    weights, z = np.array([0.5, -3.0, np.inf, np.nan]), np.array([1.0, -4.0, 9.0, 2.0])
    features, means, scales = np.array([10.0, 20.0, 30.0, 40.0]), np.array([9.0, 25.0, 30.0, 38.0]), np.ones(4)
    named = strongest_contributions(weights, z, features, means, scales, names.__getitem__, limit=3)
    assert [c.channel for c in named] == ["c", "b", "a"]
    assert named == ranked_contributions(weights, z, features, means, scales, [":".join(n) for n in names], 3)
    assert np.isinf(weights[2]) and np.isnan(weights[3])  # the weights given are left as they were


def test_a_claim_tells_the_value_the_distance_and_the_kind_of_change():
    rise = Contribution("disk.sectors_read.sda", "mean", 5.2e4, 1.1e4, 3.4e3, 12.0)
    assert claim(rise) == ("disk.sectors_read.sda mean is 5.2e+04, 12.0σ above its baseline of 1.1e+04 ± 3.4e+03 "
                           "(+4.1e+04, level rise)")
    drop = Contribution("irq.total", "std", 1.0, 5.0, 1.0, -4.0)
    assert claim(drop) == ("irq.total within-window variability is 1, 4.0σ below its baseline of 5 ± 1 "
                           "(-4, variance drop)")


def test_a_residual_names_the_channel_it_is_fitted_on_and_an_unknown_feature_is_a_departure():
    residual = Contribution("net.rx_bytes", "residual", 10.0, 0.0, 2.0, 5.0, reference="net.tx_bytes")
    assert "net.rx_bytes offset from its fit on net.tx_bytes is 10" in claim(residual)
    assert residual.explanation == "departs from what its correlated channel predicts"
    assert Contribution("x", "entropy", 1.0, 0.0, 1.0, -1.0).explanation == "departure from baseline"
