"""The consumer side of a task: one gate over all its input edges (``InputGate``).

Channels with something to read wait in one FIFO (Flink's ``inputChannelsWithData``),
so ``poll`` is fair across channels and costs one lock acquisition per buffer. Remote
buffers are appended by the I/O thread (``on_remote_buffer``); local channels are
queued by their producer's ``emit`` and read in memory when polled.

Checkpoints add two exceptions to arrival order. A blocked channel (alignment) is parked
when it comes up and rejoins the FIFO on ``unblock_all``; its buffers stay queued, so
credit-based flow control stops its producer. A PRIORITY_EVENT received over TCP jumps
ahead of the buffers queued in its channel, and its channel jumps to the head of the
FIFO; the DATA buffers it overtook are remembered for ``priority_event_overtaken``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Protocol

from weir.core.errors import NetworkError
from weir.taskmanager.network.api import BufferKind, InputGateStats, PartitionClosedError
from weir.taskmanager.network.credit_based_channel import FloatingBufferPool, Grant
from weir.taskmanager.network.input_channel import InputChannel, RemoteInputChannel

logger = logging.getLogger(__name__)


RemoteBuffer = tuple[RemoteInputChannel, BufferKind, int, bytes]
"""``(channel, kind, backlog, payload)`` as received from the channel's producer."""


class RemoteTransport(Protocol):
    """What a gate needs of the connection manager; every method is thread-safe and
    never blocks on a socket."""

    def request_partition(self, channel: RemoteInputChannel) -> None: ...

    def announce_credit(self, channel: RemoteInputChannel, credit: int) -> None: ...

    def cancel_request(self, channel: RemoteInputChannel) -> None: ...


class DefaultInputGate:
    """Implements ``InputGate``. ``poll`` belongs to one task thread; ``wakeup`` and
    ``close`` may come from any thread; ``on_remote_*`` come from the I/O thread."""

    def __init__(self, floating_buffers: int, on_close: object = None) -> None:
        self._cond = threading.Condition()
        self._available: deque[InputChannel] = deque()
        self._channels: list[list[InputChannel]] = []
        self._remote: list[RemoteInputChannel] = []
        self._transport: RemoteTransport | None = None
        self.pool = FloatingBufferPool(floating_buffers)
        self.stats = InputGateStats()
        self._unfinished = 0
        self._wakeup = False
        self._closed = False
        self._on_close = on_close
        self._blocked: set[InputChannel] = set()
        self._parked: list[InputChannel] = []
        """Blocked channels that came up in the FIFO with something to read."""
        self._overtaken: dict[InputChannel, deque[list[bytes]]] = {}
        """Per remote channel, per queued priority event, the DATA buffers it jumped."""
        self._last_overtaken: dict[InputChannel, list[bytes]] = {}

    # -- assembly (by the environment, before the gate is handed to the task) ---------

    def set_channels(
        self, channels: list[list[InputChannel]], transport: RemoteTransport | None
    ) -> None:
        self._channels = channels
        self._transport = transport
        self._remote = [
            ch for gate in channels for ch in gate if isinstance(ch, RemoteInputChannel)
        ]
        self._unfinished = sum(len(gate) for gate in channels)
        for ch in self._remote:
            ch.gate = self

    @property
    def num_gates(self) -> int:
        return len(self._channels)

    def num_channels(self, gate_index: int) -> int:
        return len(self._channels[gate_index])

    def channel(self, gate_index: int, channel_index: int) -> InputChannel:
        return self._channels[gate_index][channel_index]

    def buffered(self, gate_index: int, channel_index: int) -> int:
        """DATA buffers received on a channel and not yet polled."""
        return self._channels[gate_index][channel_index].buffered

    def queued_buffers(self) -> int:
        return sum(channel.buffered for channel in self._remote)

    # -- task thread ---------------------------------------------------------------

    def poll(self, timeout: float | None) -> tuple[int, int, BufferKind, bytes] | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        grants: list[Grant] = []
        with self._cond:
            while True:
                if self._closed:
                    msg = "the input gate was closed (the task is being cancelled)"
                    raise PartitionClosedError(msg)
                if self._wakeup:
                    self._wakeup = False
                    return None
                if self._available:
                    channel = self._available.popleft()
                    if self._blocked and channel in self._blocked:
                        error = _failure_of(channel)
                        if error is None:
                            self._parked.append(channel)
                            continue
                        # A lost producer fails the task now, not after the alignment.
                        self._available.appendleft(channel)
                        raise error
                    try:
                        taken = channel.take()
                    except NetworkError:
                        # Leave the failed channel first in line: every later poll fails too.
                        self._available.appendleft(channel)
                        raise
                    if taken is None:
                        self._mark_idle(channel)
                        continue
                    kind, payload, more = taken
                    if more:
                        self._available.append(channel)
                    else:
                        self._mark_idle(channel)
                    if kind == BufferKind.DATA:
                        self.stats.buffers_polled += 1
                        if isinstance(channel, RemoteInputChannel):
                            grants = channel.credit.on_data_consumed()
                    elif kind == BufferKind.EVENT:
                        self.stats.events_polled += 1
                    elif kind == BufferKind.PRIORITY_EVENT:
                        self.stats.events_polled += 1
                        pending = self._overtaken.get(channel)
                        if pending:
                            self._last_overtaken[channel] = pending.popleft()
                    else:
                        channel.finished = True
                        self._unfinished -= 1
                        if isinstance(channel, RemoteInputChannel):
                            grants = channel.credit.release()
                    if grants:
                        self._announce(grants)
                    return channel.gate_index, channel.channel_index, kind, payload
                # Waiting is idle time: measured per wait, never per record.
                started = time.perf_counter_ns()
                if deadline is None:
                    self._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    self._cond.wait(remaining)
                self.stats.idle_ns += time.perf_counter_ns() - started

    def block_channel(self, gate_index: int, channel_index: int) -> None:
        with self._cond:
            self._blocked.add(self._channels[gate_index][channel_index])

    def unblock_all(self) -> None:
        with self._cond:
            self._blocked.clear()
            if not self._parked:
                return
            self._available.extend(self._parked)
            self._parked.clear()
            self._cond.notify()

    def is_blocked(self, gate_index: int, channel_index: int) -> bool:
        return self._channels[gate_index][channel_index] in self._blocked

    def priority_event_overtaken(self, gate_index: int, channel_index: int) -> list[bytes]:
        with self._cond:
            return self._last_overtaken.pop(self._channels[gate_index][channel_index], [])

    def wakeup(self) -> None:
        with self._cond:
            self._wakeup = True
            self._cond.notify_all()

    def is_finished(self) -> bool:
        return self._unfinished == 0

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._available.clear()
            self._parked.clear()
            self._blocked.clear()
            self._overtaken.clear()
            self._last_overtaken.clear()
            self._cond.notify_all()
        for gate in self._channels:
            for channel in gate:
                if isinstance(channel, RemoteInputChannel):
                    if not channel.finished and self._transport is not None:
                        self._transport.cancel_request(channel)
                else:
                    channel.close()
        if callable(self._on_close):
            self._on_close(self)

    def __enter__(self) -> DefaultInputGate:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- producers and the I/O thread ---------------------------------------------------

    def enqueue(self, channel: InputChannel) -> None:
        """A local channel has something to read (called by its producer's thread)."""
        with self._cond:
            if self._closed:
                return
            self._available.append(channel)
            self._cond.notify()

    def on_remote_buffers(self, batch: list[RemoteBuffer]) -> None:
        """Buffers the I/O thread received, in arrival order (I/O thread only)."""
        with self._cond:
            if self._closed:
                return
            stats = self.stats
            was_empty = not self._available
            for channel, kind, backlog, payload in batch:
                if kind == BufferKind.PRIORITY_EVENT:
                    self._add_priority_event(channel, payload)
                    grants = channel.credit.on_buffer_received(backlog)
                    if grants:
                        self._announce(grants)
                    continue
                channel.queue.append((kind, payload))
                if kind == BufferKind.DATA:
                    stats.buffers_received += 1
                    channel.buffered += 1
                    stats.max_buffered_per_channel = max(
                        stats.max_buffered_per_channel, channel.buffered
                    )
                grants = channel.credit.on_buffer_received(backlog)
                if not channel.queued:
                    channel.queued = True
                    self._available.append(channel)
                if grants:
                    self._announce(grants)
            if was_empty and self._available:
                self._cond.notify()

    def _add_priority_event(self, channel: RemoteInputChannel, payload: bytes) -> None:
        """Under the lock: queue the event behind earlier priority events and ahead of
        everything else in the channel, and the channel ahead of the other channels
        (unless it is blocked: then it waits for ``unblock_all`` like its data)."""
        queue = channel.queue
        position = 0
        for item in queue:
            if isinstance(item, NetworkError) or item[0] != BufferKind.PRIORITY_EVENT:
                break
            position += 1
        jumped = [
            item[1]
            for i, item in enumerate(queue)
            if i >= position and not isinstance(item, NetworkError) and item[0] == BufferKind.DATA
        ]
        queue.insert(position, (BufferKind.PRIORITY_EVENT, payload))
        self._overtaken.setdefault(channel, deque()).append(jumped)
        if channel in self._blocked:
            if not channel.queued:
                channel.queued = True
                self._available.append(channel)
            return
        if channel.queued and channel in self._available:
            self._available.remove(channel)  # O(channels), once per checkpoint
        channel.queued = True
        self._available.appendleft(channel)
        self._cond.notify()

    def on_remote_error(self, channel: RemoteInputChannel, error: NetworkError) -> None:
        with self._cond:
            if self._closed or channel.finished:
                return
            channel.queue.append(error)
            if channel in self._parked:
                self._parked.remove(channel)
                self._available.append(channel)
            elif not channel.queued:
                channel.queued = True
                self._available.append(channel)
            self._cond.notify_all()

    def _mark_idle(self, channel: InputChannel) -> None:
        if isinstance(channel, RemoteInputChannel):
            channel.queued = False

    def _announce(self, grants: list[Grant]) -> None:
        if self._transport is None:
            return
        for credit, count in grants:
            owner = credit.owner
            if isinstance(owner, RemoteInputChannel) and not owner.finished:
                self.stats.credits_announced += count
                self._transport.announce_credit(owner, count)


def _failure_of(channel: InputChannel) -> NetworkError | None:
    """The error a remote channel holds behind its buffers, if its producer was lost."""
    if isinstance(channel, RemoteInputChannel) and channel.queue:
        last = channel.queue[-1]
        if isinstance(last, NetworkError):
            return last
    return None
