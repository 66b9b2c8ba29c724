"""The columns a host's channel watch judges, and their floors: every signal's mean and spread within a window, then
every pruned signal's residual mean and spread (stream_jobs/engine/residuals.py)."""

from __future__ import annotations

import warnings

import numpy as np

from schemas.channels import AGENT_PREFIX, MEM_TOTAL
from stream_jobs.engine.channel_watch import IQR_TO_SIGMA, WatchVerdict
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.column_stats import column_nanmedians, nanstd
from stream_jobs.engine.residuals import Residuals
from stream_jobs.engine.settings import EngineSettings

# A window's confirming statistic is the median of its parts' (see WatchedColumns.confirmations).
CONFIRMING_PARTS = 3


class WatchedColumns:
    """A host's watched columns: which signal and feature each column is, how one window's columns are computed, and
    each column's floor, from the host's channels and derived metrics and what its baseline taught of each signal
    (its level, whether it counts things, whether it moves at every step, the residuals of its pruned signals)."""

    def __init__(self, channels: ChannelTable, specs: tuple, settings: EngineSettings):
        self.channels, self.specs, self.settings = channels, specs, settings
        self.signal_names = channels.names + tuple(s.name for s in specs)
        self.signal_kinds = channels.kinds + ("derived",) * len(specs)
        self._cumulative = np.concatenate([channels.cumulative, np.zeros(len(specs), dtype=bool)])
        self._step_ratios = np.concatenate([np.zeros(len(channels), dtype=bool),
                                            np.array([_counts_per_count(spec, channels) for spec in specs],
                                                     dtype=bool)])
        self.forget()

    def forget(self) -> None:
        """Drop what a baseline taught: the next one is learned afresh."""
        self.residuals = Residuals.none()
        self.counted = np.zeros(len(self.signal_names), dtype=bool)
        self.ratio_floors = np.zeros(len(self.signal_names))
        self.signal_levels = np.zeros(len(self.signal_names))
        self.steady = np.zeros(len(self.signal_names), dtype=bool)

    def learn(self, signals: np.ndarray, window_means: np.ndarray, represented: dict) -> None:
        """Learn from a baseline's per-step signals (its non-overlapping windows) and every window's means."""
        self.residuals = Residuals.fit(signals, self.signal_names, represented)
        self.counted = counts_things(signals, self._countable())
        self.ratio_floors = self._ratio_floors(window_means)
        self.signal_levels = column_medians(window_means)
        self.steady = moves_every_step(signals)

    def baseline(self, window_means: np.ndarray, signals: list[np.ndarray], signal_rows: list[int]) -> np.ndarray:
        """The baseline windows' watched columns: every window's means; spreads and residuals only for the windows
        whose signals were kept (`signal_rows`), NaN elsewhere."""
        columns = 2 * len(self.signal_names) + 2 * len(self.residuals)
        baseline = np.full((len(window_means), columns), np.nan)
        for row, signal in zip(signal_rows, signals):
            baseline[row] = self.of_window(signal, window_means[row])
        baseline[:, :len(self.signal_names)] = window_means
        return baseline

    def state(self) -> dict:
        """What the baseline taught, as JSON values."""
        return {"residuals": self.residuals.to_json(), "counted": np.flatnonzero(self.counted).tolist(),
                "ratio_floors": self.ratio_floors.tolist(), "signal_levels": self.signal_levels.tolist(),
                "steady": np.flatnonzero(self.steady).tolist()}

    def restore(self, state: dict) -> None:
        signals = len(self.signal_names)
        self.residuals = Residuals.from_json(state.get("residuals"))
        self.counted = np.isin(np.arange(signals), state.get("counted", []))
        self.steady = np.isin(np.arange(signals), state.get("steady", []))
        self.ratio_floors = np.asarray(state.get("ratio_floors", np.zeros(signals)), dtype=np.float64)
        self.signal_levels = np.asarray(state.get("signal_levels", np.zeros(signals)), dtype=np.float64)

    def event_floors(self) -> np.ndarray:
        """Each signal's smallest meaningful band width (counters: a few events per window, memory levels: the
        watch's byte floor or its share of the host's memory, counters of time busy in the baseline: its core floor
        (one that never moved, such as CFS throttling, stays an event count), gauges that count things: its count
        floor or `min_limit` times the square root of their level (a count's natural spread, the least a limit allows
        of any noise), shares in percent: its percent floor, traffic counters in bytes (a disk's sectors among them) or
        packets: a rate a link carries without anyone noticing); the agent's own metrics get an infinite one, so they
        are never judged."""
        floors = event_floor(self._cumulative, self.settings.window_s, self.settings.watch.min_events)
        bytes_per_unit = np.concatenate([self.channels.bytes_per_unit, np.zeros(len(self.specs))])
        with np.errstate(divide="ignore"):
            byte_floor = max(self.settings.watch.byte_floor, self._memory_share()) / bytes_per_unit
        floors = np.where(bytes_per_unit > 0, np.fmax(floors, byte_floor), floors)
        seconds_per_unit = np.concatenate([self.channels.seconds_per_unit, np.zeros(len(self.specs))])
        busy_time = (seconds_per_unit > 0) & (self.signal_levels > 0)
        with np.errstate(divide="ignore"):
            core_floor = self.settings.watch.core_floor / seconds_per_unit
        floors = np.where(busy_time, np.fmax(floors, core_floor), floors)
        counts = self.counted & (bytes_per_unit == 0)
        natural_spread = np.sqrt(np.abs(self.signal_levels))
        count_floor = np.fmax(self.settings.watch.count_floor, self.settings.watch.min_limit * natural_spread)
        floors = np.where(counts, np.fmax(floors, count_floor), floors)
        percent = np.concatenate([self.channels.percent, np.zeros(len(self.specs), dtype=bool)])
        floors = np.where(percent, np.fmax(floors, self.settings.watch.percent_floor), floors)
        traffic = np.concatenate([self.channels.traffic_unit, np.full(len(self.specs), "", dtype=object)])
        watch = self.settings.watch
        traffic_bytes = np.concatenate([self.channels.traffic_bytes_per_unit, np.zeros(len(self.specs))])
        with np.errstate(divide="ignore"):
            floors = np.where(traffic == "bytes", np.fmax(floors, watch.byte_rate_floor / traffic_bytes), floors)
        floors = np.where(traffic == "packets", np.fmax(floors, watch.packet_rate_floor), floors)
        floors = np.fmax(floors, self.ratio_floors)
        own = np.array([name.startswith(AGENT_PREFIX) for name in self.signal_names], dtype=bool)
        return np.where(own, np.inf, floors)

    def _countable(self) -> np.ndarray:
        """The gauges that may count things: those of a table with units (a catalog's). A table without units says
        nothing of what a column counts, and a column scaled by 1,000 reads as whole numbers."""
        gauges = np.asarray(self.signal_kinds) == "gauge"
        return gauges & bool(self.channels.units)

    def _ratio_floors(self, baseline_means: np.ndarray) -> np.ndarray:
        """Floors of the derived ratios of two counters (retransmits per segment): the numerator's event floor over
        the denominator's median rate in the baseline, so a ratio moved by a handful of events is not an event."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            medians = column_nanmedians(baseline_means)
        floors = np.zeros(len(self.signal_names))
        numerator_floors = event_floor(self._cumulative, self.settings.window_s, self.settings.watch.min_events)
        for offset, spec in enumerate(self.specs):
            column = len(self.channels) + offset
            rate = medians[spec.inputs[1]] if self._step_ratios[column] else 0.0
            floors[column] = numerator_floors[spec.inputs[0]] / rate if rate > 0 else 0.0
        return floors

    def _memory_share(self) -> float:
        """The watch's share of the host's memory (its baseline level of mem.MemTotal), in bytes; 0 without it."""
        if MEM_TOTAL not in self.signal_names:
            return 0.0
        total = self.signal_levels[self.signal_names.index(MEM_TOTAL)]
        return float(total) * self.settings.watch.memory_share_floor if np.isfinite(total) and total > 0 else 0.0

    def watch_floors(self) -> np.ndarray:
        """Floors of the watched columns (see of_window): each takes its signal's, but the spread within a window of a
        counter (or of a ratio of counters) is floored where its minimum events, all arriving in one sample, would
        put it (one instant's handful is not an event); a residual's is at least a share of its pruned signal's
        spread over the baseline, so a fit that was tight does not turn a small change in the ratio of two channels
        into an event. A ratio of two counters is not judged by its spread: per sample it is the quotient of two
        handfuls of counts and leaps whenever a retransmission falls in a sample of few segments, while its mean
        carries any lasting change."""
        floors = self.event_floors()
        spreads = np.where(self._cumulative | self._step_ratios, floors * self._one_sample_burst(), floors)
        spreads = np.where(self._step_ratios, np.inf, spreads)
        residual = np.fmax(floors[self.residuals.dropped], self.settings.watch.residual_floor * self.residuals.spread)
        residual_spreads = np.fmax(spreads[self.residuals.dropped], residual)
        return np.concatenate([floors, spreads, residual, residual_spreads])

    def _one_sample_burst(self) -> float:
        """How much larger a counter's spread within a window is than its mean when all of the window's events
        arrive in one sample and none in the others."""
        samples = max(2.0, self.settings.window_s / self.settings.interval_s)
        return self.settings.window_s / self.settings.interval_s * np.sqrt(samples - 1) / samples

    def secondary_columns(self) -> np.ndarray:
        """True for the spreads (a signal's within a window, a residual's): a pruned signal's residual mean is its
        level, as primary as a kept signal's mean."""
        return self.spread_columns()

    def spread_columns(self) -> np.ndarray:
        """True for the watched columns that are spreads within a window (a signal's, or a residual's)."""
        signals, residuals = len(self.signal_names), len(self.residuals)
        index = np.arange(2 * signals + 2 * residuals)
        return ((index >= signals) & (index < 2 * signals)) | (index >= 2 * signals + residuals)

    def residual_guards(self) -> np.ndarray:
        """For every watched column, the columns that void its departure (-1: none): a residual's and its spread's
        are their representative's mean and spread. A line fitted on the baseline holds over the range its
        representative covered there; once the representative leaves its band, the residual only repeats that
        departure (a CPU burner lifts busy time, and context switches that do not follow are no news of their own)."""
        signals, residuals = len(self.signal_names), len(self.residuals)
        guards = np.full((2 * signals + 2 * residuals, 2), -1, dtype=np.int64)
        representative = np.asarray(self.residuals.representative, dtype=np.int64)
        for offset in (2 * signals, 2 * signals + residuals):
            guards[offset:offset + residuals, 0] = representative
            guards[offset:offset + residuals, 1] = signals + representative
        return guards

    def departures(self, watched: WatchVerdict) -> np.ndarray:
        """Each signal's departure: its watched columns' furthest, with its sign."""
        departures = np.zeros(len(self.signal_names))
        order = np.argsort(np.abs(watched.departure), kind="stable")
        departures[self._column_owners(len(watched.departure))[order]] = watched.departure[order]
        return departures

    def ranked(self, watched: WatchVerdict, feature_z: np.ndarray | None = None) -> tuple[str, ...]:
        """Every signal, furthest from its own normal first: what a flagged window implicates, in order, whichever
        detector flagged it. A signal's evidence is the root of the sum of its watched columns' squared z (its level,
        its spread, and its residuals from its representative: views of it, each in its own noise, that add) or,
        where larger, the largest |z| of its window features (`feature_z`, one per signal)."""
        evidence = np.zeros(len(self.signal_names))
        np.add.at(evidence, self._column_owners(len(watched.z)), np.square(np.nan_to_num(watched.z)))
        evidence = np.sqrt(evidence)
        if feature_z is not None:
            evidence = np.fmax(evidence, feature_z)
        return tuple(np.asarray(self.signal_names, dtype=object)[np.argsort(-evidence, kind="stable")])

    def _column_owners(self, columns: int) -> np.ndarray:
        """The signal each of the `columns` watched columns belongs to: every signal twice (mean, spread), then
        every residual's pruned signal twice (residual, residual spread)."""
        signals = np.arange(len(self.signal_names))
        dropped = np.asarray(self.residuals.dropped, dtype=np.int64)
        return np.concatenate([signals, signals, dropped, dropped])[:columns]

    def reference(self, index: int) -> str:
        """The representative a residual column is fitted on ('' for a signal's own columns)."""
        signals = len(self.signal_names)
        if index < 2 * signals:
            return ""
        return self.signal_names[self.residuals.representative[(index - 2 * signals) % len(self.residuals)]]

    def of_window(self, signal: np.ndarray, means: np.ndarray) -> np.ndarray:
        """The watched columns of one window: every signal's mean and spread, then every residual's mean and
        spread."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            spreads = nanstd(signal, axis=0)
        return np.concatenate([means, spreads, *self.residuals.summary(signal)])

    def confirmations(self, signal: np.ndarray) -> np.ndarray | None:
        """The watched columns' confirmations (see ChannelWatch.judge): each column as the median over the window's
        thirds, so a burst within one third does not move it, at any stride and sampling interval; None for a
        window of fewer than three steps."""
        if signal.shape[0] < CONFIRMING_PARTS:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            parts = np.array_split(signal, CONFIRMING_PARTS)
            return column_nanmedians(np.stack([self._part(part) for part in parts]))

    def _part(self, part: np.ndarray) -> np.ndarray:
        """One part's watched columns. Signals that move at every step take its median step and quartile spread,
        so that a burst straddling two seconds moves neither; others (read less often, or sparse) its mean and
        standard deviation."""
        watched = self.of_window(part, column_means(part))
        steady = np.flatnonzero(self.steady)
        if len(steady) and len(part) >= 4:
            signals, rows = len(self.signal_names), len(part)
            ordered = np.sort(part[:, steady], axis=0)  # a NaN sorts last and makes that signal's quartiles NaN
            complete = np.isfinite(ordered[-1])
            median = 0.5 * (ordered[(rows - 1) // 2] + ordered[rows // 2])
            spread = (ordered[(3 * rows) // 4] - ordered[rows // 4]) / IQR_TO_SIGMA
            watched[steady] = np.where(complete, median, np.nan)
            watched[signals + steady] = np.where(complete, spread, np.nan)
        return watched

    def signal_of(self, index: int) -> int:
        """The signal a watched column belongs to (a residual's pruned signal)."""
        signals = len(self.signal_names)
        if index < 2 * signals:
            return index % signals
        return int(self.residuals.dropped[(index - 2 * signals) % len(self.residuals)])

    def name(self, index: int) -> str:
        return self.signal_names[self.signal_of(index)]

    def feature(self, index: int) -> str:
        """'mean' or 'std' of the signal, or 'residual' / 'residual-std' of a pruned signal around its fit."""
        signals = len(self.signal_names)
        if index < 2 * signals:
            return "mean" if index < signals else "std"
        return "residual" if index < 2 * signals + len(self.residuals) else "residual-std"


def column_means(signal: np.ndarray) -> np.ndarray:
    """Each channel's mean over the window (NaN for a channel never read)."""
    counts = np.isfinite(signal).sum(axis=0)
    totals = np.where(np.isfinite(signal), signal, 0.0).sum(axis=0)
    return np.divide(totals, counts, out=np.full(signal.shape[1], np.nan), where=counts > 0)


def column_medians(means: np.ndarray) -> np.ndarray:
    """Each column's median, 0 where it was never read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nan_to_num(column_nanmedians(means))


def moves_every_step(signals: np.ndarray, share: float = 0.9) -> np.ndarray:
    """Signals nonzero in at least `share` of the baseline's steps (read at every tick and always moving); a signal
    read less often, or a sparse counter, is zero at most steps, and its median step says nothing."""
    if signals.shape[0] == 0:
        return np.zeros(signals.shape[1], dtype=bool)
    return (np.isfinite(signals) & (signals != 0)).mean(axis=0) >= share


def counts_things(signal: np.ndarray, gauges: np.ndarray) -> np.ndarray:
    """True for the gauges whose every baseline sample (rows of `signal`) is a whole number: a count of things, which
    moves by one thing at a time, so that a change of one or two is the gauge's resolution, not an effect."""
    with np.errstate(invalid="ignore"):
        whole = np.where(np.isfinite(signal), signal == np.round(signal), True).all(axis=0)
    return whole & np.isfinite(signal).any(axis=0) & np.asarray(gauges, dtype=bool)


def _counts_per_count(spec, channels: ChannelTable) -> bool:
    """Whether a derived channel is the per-step ratio of two counters."""
    return spec.formula == "delta_ratio" and all(channels.cumulative[i] for i in spec.inputs[:2])


def event_floor(cumulative: np.ndarray, window_s: float, min_events: float) -> np.ndarray:
    """The smallest meaningful change per channel: `min_events` per window, as a rate, for counters (whose signal
    is a rate per second); none for gauges, whose floors come from their units."""
    return np.where(np.asarray(cumulative, dtype=bool), min_events / window_s, 0.0)
