"""Why a stored baseline does not fit, in words: the channels a catalog gained and lost (the first few named), the
same channels declared otherwise or listed in another order, and the settings that differ; nothing when it fits."""

from stream_jobs.engine.baseline_fit import SHOWN_NAMES, baseline_misfit, catalog_change, why_not_resumed
from stream_jobs.engine.settings import EngineSettings

LEARNED_WITH = EngineSettings().learned_with()
NAMES = ("cpu.busy.cpu0", "irq.36.cpu0", "irq.RES.cpu0")


def stored(names=NAMES, learned_with=LEARNED_WITH, **more) -> dict:
    return {"signal_names": list(names), "learned_with": learned_with, "model": {}, **more}


def test_a_baseline_of_the_same_channels_and_settings_fits():
    assert baseline_misfit(stored(), NAMES, LEARNED_WITH) == ""
    assert why_not_resumed(stored(catalog_version=7), 7, NAMES, LEARNED_WITH) == ""


def test_many_added_channels_are_counted_beyond_the_first_few_named():
    now = NAMES + tuple(f"irq.{line}.cpu0" for line in range(40, 40 + SHOWN_NAMES + 3))
    told = catalog_change(NAMES, now)
    assert told.startswith(f"the catalog changed ({SHOWN_NAMES + 3} channels added: irq.40.cpu0, ")
    assert told.endswith(" and 3 more)") and "removed" not in told


def test_the_same_channels_in_another_order_or_declared_otherwise_are_told_apart():
    assert baseline_misfit(stored(NAMES[::-1]), NAMES, LEARNED_WITH) == \
        "the catalog lists the same channels in another order"
    assert why_not_resumed(stored(catalog_version=7), 8, NAMES, LEARNED_WITH) == \
        "the catalog changed (version 7, now 8): its channels are declared otherwise"


def test_a_baseline_without_a_model_or_learned_with_other_settings_says_so():
    assert baseline_misfit({"signal_names": list(NAMES)}, NAMES, LEARNED_WITH) == "the stored baseline holds no model"
    older = {key: value for key, value in LEARNED_WITH.items() if key != "seed"}
    assert baseline_misfit(stored(learned_with={**older, "stride_s": 0.5}), NAMES, LEARNED_WITH) == \
        f"it was learned with seed unset, now {LEARNED_WITH['seed']}; stride_s 0.5, now {LEARNED_WITH['stride_s']}"


def test_no_stored_baseline_says_where_it_was_looked_for():
    assert why_not_resumed(None, 7, NAMES, LEARNED_WITH, "/data") == "no baseline of this host is stored in /data"
    assert why_not_resumed(None, 7, NAMES, LEARNED_WITH) == "no baseline of this host is stored"
