"""Consumer-side credit accounting: exclusive credits per channel, floating credits per gate.

This is Flink's ``CreditBasedInputChannel``/``BufferManager`` bookkeeping without the
buffers: Python ``bytes`` need no pre-allocated segments, so a credit is simply the
permission for the producer to have one more DATA buffer on its way to, or waiting in,
the channel. The invariant kept per channel is::

    credits at producer + buffers in flight + buffers queued at consumer
        == exclusive + floating

The objects here are pure (no locks, no sockets); the input gate calls them under its
own lock and forwards the returned grants to the producers as AddCredit messages.
"""

from __future__ import annotations

import logging
from collections import deque

logger = logging.getLogger(__name__)

Grant = tuple["ChannelCredit", int]
"""``(channel, credits)`` to announce to that channel's producer."""


class FloatingBufferPool:
    """The floating credits one gate lends to backlogged channels."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.available = size
        self._waiting: deque[ChannelCredit] = deque()

    def take(self, wanted: int) -> int:
        taken = min(wanted, self.available)
        self.available -= taken
        return taken

    def wait_for_credit(self, channel: ChannelCredit) -> None:
        if not channel.waiting:
            channel.waiting = True
            self._waiting.append(channel)

    def recycle(self) -> list[Grant]:
        """Take back one floating credit and hand it to the first channel still waiting."""
        self.available += 1
        while self._waiting and self.available:
            channel = self._waiting.popleft()
            channel.waiting = False
            grants = channel.request_floating()
            if grants:
                return grants
        return []


class ChannelCredit:
    """Credit state of one remote input channel.

    ``on_buffer_received`` runs when a buffer arrives (I/O thread), ``on_data_consumed``
    when the task polls a DATA buffer (task thread); the gate serializes both.
    """

    __slots__ = ("backlog", "exclusive", "floating", "owner", "pool", "waiting")

    def __init__(self, exclusive: int, pool: FloatingBufferPool, owner: object = None) -> None:
        self.exclusive = exclusive
        self.floating = 0
        self.backlog = 0
        """The producer's backlog as last announced."""
        self.pool = pool
        self.waiting = False
        self.owner = owner
        """Whatever the gate routes grants to (the input channel)."""

    @property
    def total(self) -> int:
        return self.exclusive + self.floating

    def request_floating(self) -> list[Grant]:
        """Borrow floating credits so that ``floating >= backlog`` (Flink: available
        buffers >= backlog + initial credit); queue up for the rest."""
        need = self.backlog - self.floating
        if need <= 0:
            return []
        taken = self.pool.take(need)
        if taken < need:
            self.pool.wait_for_credit(self)
        if not taken:
            return []
        self.floating += taken
        return [(self, taken)]

    def on_buffer_received(self, backlog: int) -> list[Grant]:
        self.backlog = backlog
        return self.request_floating()

    def on_data_consumed(self) -> list[Grant]:
        """The task took one DATA buffer: its credit goes back to the producer, unless
        it was a floating credit the channel no longer needs, which returns to the pool."""
        if self.floating > self.backlog:
            self.floating -= 1
            return self.pool.recycle()
        return [(self, 1)]

    def release(self) -> list[Grant]:
        """The channel is done (END received, or cancelled): give its floating credits back."""
        grants: list[Grant] = []
        self.backlog = 0
        while self.floating:
            self.floating -= 1
            grants.extend(self.pool.recycle())
        return grants
