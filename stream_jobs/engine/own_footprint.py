"""Reveal's own footprint in a window, as the agent measured it (producers/collectors/own_footprint.py): its share is
taken out of the host's channels that hold it (the host's sockets in TIME_WAIT less Reveal's, for the 60 s they last;
its CPU time given back to idle; the page cache its data folder holds out of the host's cached, dirty and writeback
memory, for as long as the kernel keeps it), and in the frames in which Reveal works (a command runs, a page or query is
served) the channels that work moves without a measured share read as unread channels do (NaN), so they are neither
judged nor learned there. What Reveal does is accounted to it for as long as it lasts, and the rest of the host is
judged throughout."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from schemas.channels import OWN_SHARES, OWN_WORK, moved_by_own_work
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.windows import Window

# The agent reads Reveal's footprint once a second, before or after a block of ticks of that length, and lets the
# reading stand for every tick of the block: work seen at a reading happened within this long of the frame holding it.
READING_SPAN_S = 1.0


class OwnFootprint:
    """Takes Reveal's measured share out of one host's windows and leaves out what its work moves while it works."""

    def __init__(self, channels: ChannelTable):
        index = {name: column for column, name in enumerate(channels.names)}
        per_unit = channels.bytes_per_unit
        self.shares = [(index[host], index[own], sign, _in_units_of(per_unit[index[host]], per_unit[index[own]]))
                       for host, own, sign in OWN_SHARES if host in index and own in index]
        self.cumulative = channels.cumulative
        self.work = [index[name] for name in OWN_WORK if name in index]
        self.moved = np.array([moved_by_own_work(name) for name in channels.names], dtype=bool)

    def account(self, window: Window) -> tuple[Window, bool]:
        """The window with Reveal's footprint accounted for, and whether Reveal worked in it."""
        if not self.shares and not self.work:
            return window, False
        values = window.values.astype(np.float64, copy=True)
        for host, own, sign, scale in self.shares:
            values[:, host] = self._without(values[:, host], scale * np.nan_to_num(values[:, own]), sign,
                                            self.cumulative[host])
        working = self.working_frames(window.timestamps_ns, window.values)
        if working.any():
            values[np.ix_(working, self.moved & ~self.cumulative)] = np.nan
            counters = np.flatnonzero(self.moved & self.cumulative)
            values[:, counters] = np.where(_spans_worked_in(values[:, counters], working), np.nan, values[:, counters])
        return replace(window, values=values), bool(working.any())

    def working_frames(self, timestamps_ns: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The frames within a reading span of a reading that saw Reveal at work: a work counter rose at it, or a work
        gauge was above zero."""
        seen = np.zeros(len(timestamps_ns), dtype=bool)
        for column in self.work:
            series = values[:, column]
            if self.cumulative[column]:
                seen[1:] |= np.diff(series) > 0
            else:
                seen |= series > 0
        if not seen.any():
            return seen
        span_ns = READING_SPAN_S * 1e9
        nearest = np.abs(timestamps_ns[:, None] - timestamps_ns[seen][None, :]).min(axis=1)
        return nearest < span_ns

    @staticmethod
    def _without(host: np.ndarray, own: np.ndarray, sign: int, cumulative: bool) -> np.ndarray:
        """A host channel less Reveal's share (`own`, in the host channel's units; `sign` 1) or with it given back
        (-1): a level less Reveal's level, never below zero; a counter's steps scaled so that they add up to the
        host's count less Reveal's over the window (Reveal's share is read once a block of ticks, the host's every
        tick)."""
        if not cumulative:
            return np.where(np.isnan(host), np.nan, np.fmax(host - sign * _with_the_reading_before(own), 0.0))
        steps = np.diff(host)
        host_total = np.nansum(np.fmax(steps, 0.0))
        own_total = sign * np.nansum(np.fmax(np.diff(own), 0.0))
        if host_total <= 0 or own_total == 0:
            return host
        scaled = steps * max(0.0, 1.0 - own_total / host_total)
        adjusted = host[0] + np.concatenate([[0.0], np.nancumsum(scaled)])
        return np.where(np.isnan(host), np.nan, adjusted)


def _with_the_reading_before(own: np.ndarray) -> np.ndarray:
    """Each frame's share as the larger of its reading and the reading before it. The host's level and Reveal's
    share are read apart by up to a reading span, so sockets that leave TIME_WAIT together in between are gone from
    the share while the host's reading still holds them: for that span the host would show Reveal's own sockets."""
    starts = np.ones(len(own), dtype=bool)
    starts[1:] = own[1:] != own[:-1]
    readings = own[starts]
    before = np.concatenate([readings[:1], readings[:-1]])
    return np.fmax(own, before[np.cumsum(starts) - 1])


def _in_units_of(host_bytes_per_unit: float, own_bytes_per_unit: float) -> float:
    """How many of the host channel's units one unit of Reveal's share is: a share in bytes of a level in pages is
    that many pages; shares of anything else are in the host channel's own units."""
    if host_bytes_per_unit > 0 and own_bytes_per_unit > 0:
        return own_bytes_per_unit / host_bytes_per_unit
    return 1.0


def _spans_worked_in(counters: np.ndarray, working: np.ndarray) -> np.ndarray:
    """Which frames of each counter (frames × counters) to leave out so that every increment that spans a frame
    Reveal worked in is left out whole, with the steps it spans, and every other increment is kept with all of its
    steps: a counter read once a second holds its reading for ten frames, and the step into its next reading carries
    the whole second's increment, which one NaN among the ten frames would leave over a tenth of the time. Where
    anything is left out, so are the window's first and last readings, whose increments the window holds only in
    part (the one before it began, the one after it ended), which otherwise make up for each other."""
    frames, columns = counters.shape
    starts = np.ones((frames, columns), dtype=bool)
    with np.errstate(invalid="ignore"):
        starts[1:] = counters[1:] != counters[:-1]
    held = np.cumsum(starts, axis=0) - 1  # each frame's reading, counted from the window's first
    column = np.broadcast_to(np.arange(columns), (frames, columns))
    worked = np.zeros((frames, columns), dtype=bool)  # by reading
    worked[held[working], column[working]] = True
    closing = working[:, None] & starts & (held > 0)  # a reading taken in a worked frame closes the increment before it
    worked[held[closing] - 1, column[closing]] = True
    partial = worked.any(axis=0)
    worked[0, partial] = True
    worked[held[-1, partial], np.flatnonzero(partial)] = True
    alone = starts & np.vstack([starts[1:], np.ones((1, columns), dtype=bool)])
    return worked[held, column] & (~starts | alone)
