"""Whether a stored baseline fits a host's pipeline and, when it does not, why, in words a restart can print: a run
that learns again from scratch says so, rather than leaving the operator to wonder where the baseline went."""

from __future__ import annotations

SHOWN_NAMES = 5  # channels named when a catalog change is told; the rest are counted


def why_not_resumed(saved: dict | None, catalog_version: int, signal_names: tuple[str, ...], learned_with: dict,
                    stored_in: str = "") -> str:
    """Why a pipeline of this catalog, signals and settings cannot resume the baseline stored for its host (None
    when none is); empty when it can. A store holding none of this catalog hands back the host's latest of another,
    named by its catalog_version, so that the change can be told."""
    if saved is None:
        return f"no baseline of this host is stored{f' in {stored_in}' if stored_in else ''}"
    misfit = baseline_misfit(saved, signal_names, learned_with)
    learned_on = saved.get("catalog_version", catalog_version)
    if misfit or learned_on == catalog_version:
        return misfit
    return f"the catalog changed (version {learned_on}, now {catalog_version}): its channels are declared otherwise"


def baseline_misfit(state: dict, signal_names: tuple[str, ...], learned_with: dict) -> str:
    """Why a saved baseline cannot be taken over by a pipeline of these signals and settings; empty when it can."""
    saved_names = tuple(state.get("signal_names", ()))
    if saved_names != signal_names:
        return catalog_change(saved_names, signal_names)
    if "model" not in state:
        return "the stored baseline holds no model"
    return settings_change(state.get("learned_with") or {}, learned_with)


def catalog_change(saved: tuple[str, ...], now: tuple[str, ...]) -> str:
    """The channels a catalog gained and lost since a baseline was learned on it.

    >>> catalog_change(("a", "b", "c"), ("a", "d"))
    'the catalog changed (1 channel added: d; 2 channels removed: b, c)'
    """
    saved_set, now_set = set(saved), set(now)
    added = [name for name in now if name not in saved_set]
    removed = [name for name in saved if name not in now_set]
    if not added and not removed:
        return "the catalog lists the same channels in another order"
    told = [_counted(names, what) for names, what in ((added, "added"), (removed, "removed")) if names]
    return f"the catalog changed ({'; '.join(told)})"


def settings_change(saved: dict, now: dict) -> str:
    """The settings a baseline was learned with that differ from this run's.

    >>> settings_change({"window_s": 3.0, "mode": "balanced"}, {"window_s": 2.0, "mode": "balanced"})
    'it was learned with window_s 3.0, now 2.0'
    """
    differing = [f"{key} {saved.get(key, 'unset')}, now {now.get(key, 'unset')}"
                 for key in sorted(set(saved) | set(now)) if saved.get(key) != now.get(key)]
    return f"it was learned with {'; '.join(differing)}" if differing else ""


def _counted(names: list[str], what: str) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return f"{len(names)} channel{'s' if len(names) != 1 else ''} {what}: {shown}{more}"
