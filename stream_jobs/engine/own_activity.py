"""Which windows Reveal's own commands loaded: the agent counts the seconds they ran on the host (see
producers.own_commands); a window in which that counter rose, or that starts within OWN_ACTIVITY_SETTLE_S of its
last rise, carries their load, and its departures are not the host's own findings."""

from __future__ import annotations

import numpy as np

from schemas.channels import OWN_COMMANDS_SECONDS

# What Reveal's own commands leave behind (queues draining, memory handed back, sockets closing) is gone this long
# after the last of them ended
OWN_ACTIVITY_SETTLE_S = 5.0


class OwnActivity:
    """Follows one host's counter of Reveal's command seconds from window to window."""

    def __init__(self, names: tuple[str, ...]):
        self.column = names.index(OWN_COMMANDS_SECONDS) if OWN_COMMANDS_SECONDS in names else None
        self.until_ns: int | None = None

    def in_window(self, timestamps_ns: np.ndarray, values: np.ndarray, start_ns: int) -> bool:
        """Whether Reveal's commands ran during the window (its frames' times and raw values, in catalog order)
        or within the settling time before it."""
        if self.column is None:
            return False
        ran = np.diff(values[:, self.column]) > 0
        if ran.any():
            self.until_ns = int(timestamps_ns[1:][ran][-1]) + round(OWN_ACTIVITY_SETTLE_S * 1e9)
            return True
        return self.until_ns is not None and start_ns <= self.until_ns
