"""Checkpoint barrier handling on a task's inputs: aligned, at-least-once and unaligned.

These are Flink's ``CheckpointBarrierHandler`` family reduced to decisions: the task's
mailbox loop reports what it polled from its input gate (a barrier, a data buffer, an
END_OF_PARTITION) and carries out the returned actions itself. A handler does no I/O,
takes no lock and keeps no clock, so every ordering of inputs is a plain unit test.

A channel is ``(gate_index, channel_index)``: gate ``i`` is input edge ``i`` of the task
(two for ``connect``, one per upstream for ``union``), so one handler covers every input.

Actions, in the order the task must carry them out:

- ``TriggerSnapshot``: capture the task's state for the barrier's checkpoint and send
  the barrier downstream. Aligned and at-least-once: capture first, then
  ``broadcast_event`` the barrier behind the data. Unaligned: ``emit_priority_event`` the
  barrier (it overtakes queued output; the overtaken buffers are output channel state)
  and capture the operator state before processing another record.
- ``BlockChannel``: stop delivering the channel's buffers (``InputGate.block_channel``).
- ``UnblockAll``: deliver the blocked channels again (``InputGate.unblock_all``).
- ``AbortCheckpoint``: the checkpoint cannot complete here; decline it to the
  coordinator (and drop whatever was captured for it).
- ``ChannelStateComplete``: unaligned only; every input delivered the barrier, so the
  in-flight input buffers of the checkpoint are all known and can be written.
- ``ReadToEnd``: unaligned only, for channels whose producer's operators have finished
  (``UnalignedBarrierHandler``): read each of ``channels``, and no other, ahead of
  processing until ``awaits`` says it is no longer needed (its END_OF_PARTITION, or its
  barrier if its producer still takes one), reporting each buffer (``on_buffer``), END
  (``on_end_of_partition``) and barrier (``on_barrier``) as it is read and carrying out
  what they return; then process what was read, in order, without reporting it again.
  What remains to come from such a producer is bounded (its subpartition's queue and the
  channel's credit), so this takes the time of the network, not of processing it.
"""

from __future__ import annotations

import abc
import enum
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from weir.taskmanager.task_events import CheckpointBarrier

logger = logging.getLogger(__name__)

ChannelId = tuple[int, int]
"""``(gate_index, channel_index)``, as ``InputGate.poll`` reports it."""


class AbortReason(enum.Enum):
    """Why a task declines a checkpoint (named after Flink's ``CheckpointFailureReason``)."""

    CHECKPOINT_DECLINED_SUBSUMED = "CHECKPOINT_DECLINED_SUBSUMED"
    """A barrier of a newer checkpoint arrived before this one was complete."""
    CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER = "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER"
    """The coordinator (or an upstream task) aborted the checkpoint."""


@dataclass(frozen=True, slots=True)
class TriggerSnapshot:
    barrier: CheckpointBarrier
    unaligned: bool
    """Forward the barrier with ``emit_priority_event`` rather than in order."""

    @property
    def checkpoint_id(self) -> int:
        return self.barrier.checkpoint_id


@dataclass(frozen=True, slots=True)
class BlockChannel:
    gate_index: int
    channel_index: int


@dataclass(frozen=True, slots=True)
class UnblockAll:
    pass


@dataclass(frozen=True, slots=True)
class AbortCheckpoint:
    checkpoint_id: int
    reason: AbortReason


@dataclass(frozen=True, slots=True)
class ChannelStateComplete:
    checkpoint_id: int
    channel_state: dict[ChannelId, list[bytes]] = field(default_factory=dict)
    """Per input channel, the serialized DATA buffers that were in flight (sent before
    the barrier, processed after the snapshot), in arrival order. Channels that had
    none are absent."""


@dataclass(frozen=True, slots=True)
class ReadToEnd:
    checkpoint_id: int
    channels: frozenset[ChannelId]


Action = (
    TriggerSnapshot | BlockChannel | UnblockAll | AbortCheckpoint | ChannelStateComplete | ReadToEnd
)


class CheckpointBarrierHandler(Protocol):
    """What the task loop calls; every method runs on the task thread."""

    def on_barrier(
        self,
        gate_index: int,
        channel_index: int,
        barrier: CheckpointBarrier,
        overtaken: Sequence[bytes] = (),
    ) -> list[Action]:
        """A barrier was polled from the channel. ``overtaken`` are DATA buffers still
        queued in the gate that a priority barrier jumped
        (``InputGate.priority_event_overtaken``); only unaligned checkpoints have any."""
        ...

    def on_buffer(self, gate_index: int, channel_index: int, buffer: bytes) -> bool:
        """A DATA buffer was polled (before the task processes it). True if it was
        captured as in-flight channel state; the task processes it either way."""
        ...

    def on_end_of_partition(self, gate_index: int, channel_index: int) -> list[Action]:
        """The channel delivered END_OF_PARTITION; nothing follows on it."""
        ...

    def on_checkpoint_aborted(self, checkpoint_id: int) -> list[Action]:
        """The coordinator aborted the checkpoint (timeout, a decline elsewhere)."""
        ...


class _Inputs:
    """The channels of a task and which of them have ended."""

    def __init__(self, channels_per_gate: Sequence[int]) -> None:
        self.all: frozenset[ChannelId] = frozenset(
            (g, c) for g, n in enumerate(channels_per_gate) for c in range(n)
        )
        self.ended: set[ChannelId] = set()

    def check(self, gate_index: int, channel_index: int) -> ChannelId:
        """The channel, once it is known to be an input of this task."""
        channel = (gate_index, channel_index)
        if channel not in self.all:
            msg = (
                f"barrier handling got channel {channel}, which is not an input of this "
                f"task ({len(self.all)} channels); the handler was built for another gate"
            )
            raise ValueError(msg)
        return channel

    def end(self, gate_index: int, channel_index: int) -> None:
        """The channel delivered END_OF_PARTITION."""
        self.ended.add(self.check(gate_index, channel_index))

    def all_in(self, delivered: Iterable[ChannelId]) -> bool:
        """Every channel delivered the barrier or has ended."""
        return self.all <= self.ended.union(delivered)


class _SingleCheckpointBarrierHandler(abc.ABC):
    """What the aligned and unaligned handlers share (Flink's
    ``SingleCheckpointBarrierHandler``, one class in both modes): they work on one
    checkpoint at a time, the newest one a barrier was seen for.

    ``on_barrier`` drops the barriers of older checkpoints and repeats on a channel; a
    barrier of a newer checkpoint subsumes the pending one (``_subsume``) and starts
    the new one (``_start``); every first delivery of the current barrier on a channel
    goes to ``_delivered``.
    """

    def __init__(self, channels_per_gate: Sequence[int]) -> None:
        self._inputs = _Inputs(channels_per_gate)
        self._current = -1
        """The newest checkpoint a barrier was seen for."""
        self._delivered: set[ChannelId] | None = None
        """Channels that delivered the current barrier, while its checkpoint is pending
        here (aligning, or capturing channel state)."""

    @property
    def pending_checkpoint_id(self) -> int | None:
        return self._current if self._delivered is not None else None

    def on_barrier(
        self,
        gate_index: int,
        channel_index: int,
        barrier: CheckpointBarrier,
        overtaken: Sequence[bytes] = (),
        unprocessed: Mapping[ChannelId, Sequence[bytes]] | None = None,
    ) -> list[Action]:
        """``unprocessed``: see ``UnalignedBarrierHandler.on_trigger``."""
        channel = self._inputs.check(gate_index, channel_index)
        n = barrier.checkpoint_id
        actions: list[Action] = []
        if n < self._current or (n == self._current and self._delivered is None):
            logger.debug("dropping late barrier %d on %s (current %d)", n, channel, self._current)
            return actions
        if n > self._current:
            if self._delivered is not None:
                actions += self._subsume(n)
            self._current = n
            self._delivered = set()
            actions += self._start(barrier, unprocessed)
        delivered = self._delivered
        assert delivered is not None
        if channel in delivered:
            logger.warning("channel %s delivered barrier %d twice; ignoring the repeat", channel, n)
            return actions
        delivered.add(channel)
        actions += self._on_delivered(gate_index, channel_index, overtaken)
        return actions

    def on_checkpoint_aborted(self, checkpoint_id: int) -> list[Action]:
        if self._delivered is None or checkpoint_id != self._current:
            self._current = max(self._current, checkpoint_id)
            return []
        return self._abort(AbortReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER)

    def _abort(self, reason: AbortReason) -> list[Action]:
        """Give up the pending checkpoint; the subclass adds its own clean-up."""
        self._delivered = None
        return [AbortCheckpoint(self._current, reason)]

    @abc.abstractmethod
    def _subsume(self, newer: int) -> list[Action]:
        """A barrier of checkpoint ``newer`` arrived while ``_current`` was pending."""

    @abc.abstractmethod
    def _start(
        self,
        barrier: CheckpointBarrier,
        unprocessed: Mapping[ChannelId, Sequence[bytes]] | None = None,
    ) -> list[Action]:
        """The first barrier of checkpoint ``_current`` arrived."""

    @abc.abstractmethod
    def _on_delivered(
        self, gate_index: int, channel_index: int, overtaken: Sequence[bytes]
    ) -> list[Action]:
        """The channel delivered the current barrier (it is in ``_delivered`` now)."""


class AlignedBarrierHandler(_SingleCheckpointBarrierHandler):
    """EXACTLY_ONCE with aligned barriers (Flink's ``SingleCheckpointBarrierHandler`` in
    aligned mode).

    A channel that delivered barrier *n* is blocked until every channel has delivered it
    (or ended); then the snapshot is triggered and the channels are unblocked. A barrier
    of a newer checkpoint during an alignment aborts the older one (subsumed), unblocks
    everything and starts the new alignment. Barriers of checkpoints older than the
    latest one seen are late (their checkpoint was aborted) and are dropped.
    """

    def __init__(self, channels_per_gate: Sequence[int]) -> None:
        super().__init__(channels_per_gate)
        self._barrier: CheckpointBarrier | None = None
        self._blocked: set[ChannelId] = set()

    @property
    def blocked_channels(self) -> frozenset[ChannelId]:
        return frozenset(self._blocked)

    def on_buffer(self, gate_index: int, channel_index: int, buffer: bytes) -> bool:
        return False

    def on_end_of_partition(self, gate_index: int, channel_index: int) -> list[Action]:
        self._inputs.end(gate_index, channel_index)
        if self._delivered is not None and self._inputs.all_in(self._delivered):
            return self._complete()
        return []

    def _subsume(self, newer: int) -> list[Action]:
        return self._abort(AbortReason.CHECKPOINT_DECLINED_SUBSUMED)

    def _start(
        self,
        barrier: CheckpointBarrier,
        unprocessed: Mapping[ChannelId, Sequence[bytes]] | None = None,
    ) -> list[Action]:
        self._barrier = barrier
        return []

    def _on_delivered(
        self, gate_index: int, channel_index: int, overtaken: Sequence[bytes]
    ) -> list[Action]:
        assert self._delivered is not None
        if self._inputs.all_in(self._delivered):
            return self._complete()
        self._blocked.add((gate_index, channel_index))
        return [BlockChannel(gate_index, channel_index)]

    def _complete(self) -> list[Action]:
        barrier = self._barrier
        assert barrier is not None
        self._delivered = None
        self._barrier = None
        return [TriggerSnapshot(barrier, unaligned=False), *self._unblock()]

    def _abort(self, reason: AbortReason) -> list[Action]:
        logger.info("checkpoint %d aborted during alignment: %s", self._current, reason.value)
        self._barrier = None
        return [*super()._abort(reason), *self._unblock()]

    def _unblock(self) -> list[Action]:
        if not self._blocked:
            return []
        self._blocked.clear()
        return [UnblockAll()]


class AtLeastOnceBarrierHandler:
    """AT_LEAST_ONCE (Flink's ``CheckpointBarrierTracker``): never blocks a channel.

    Barriers are counted per checkpoint; the snapshot is triggered when the last channel
    delivers its barrier (or ends). Several checkpoints may be pending at once; when one
    triggers, older pending ones can never complete (their barriers are behind on some
    channel that already moved on) and are aborted as subsumed.
    """

    def __init__(self, channels_per_gate: Sequence[int]) -> None:
        self._inputs = _Inputs(channels_per_gate)
        self._pending: dict[int, tuple[CheckpointBarrier, set[ChannelId]]] = {}
        self._latest_triggered = -1

    @property
    def pending_checkpoint_ids(self) -> list[int]:
        return sorted(self._pending)

    def on_barrier(
        self,
        gate_index: int,
        channel_index: int,
        barrier: CheckpointBarrier,
        overtaken: Sequence[bytes] = (),
    ) -> list[Action]:
        channel = self._inputs.check(gate_index, channel_index)
        n = barrier.checkpoint_id
        if n <= self._latest_triggered:
            logger.debug("dropping late barrier %d on %s", n, channel)
            return []
        _, seen = self._pending.setdefault(n, (barrier, set()))
        if channel in seen:
            logger.warning("channel %s delivered barrier %d twice; ignoring the repeat", channel, n)
            return []
        seen.add(channel)
        return self._trigger_complete()

    def on_buffer(self, gate_index: int, channel_index: int, buffer: bytes) -> bool:
        return False

    def on_end_of_partition(self, gate_index: int, channel_index: int) -> list[Action]:
        self._inputs.end(gate_index, channel_index)
        return self._trigger_complete()

    def on_checkpoint_aborted(self, checkpoint_id: int) -> list[Action]:
        if self._pending.pop(checkpoint_id, None) is None:
            return []
        return [
            AbortCheckpoint(checkpoint_id, AbortReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER)
        ]

    def _trigger_complete(self) -> list[Action]:
        complete = [n for n, (_, seen) in self._pending.items() if self._inputs.all_in(seen)]
        if not complete:
            return []
        newest = max(complete)
        actions: list[Action] = []
        for n in sorted(self._pending):
            if n < newest:
                actions.append(AbortCheckpoint(n, AbortReason.CHECKPOINT_DECLINED_SUBSUMED))
                del self._pending[n]
        barrier, _ = self._pending.pop(newest)
        self._latest_triggered = newest
        actions.append(TriggerSnapshot(barrier, unaligned=False))
        return actions


class UnalignedBarrierHandler(_SingleCheckpointBarrierHandler):
    """Unaligned EXACTLY_ONCE (Flink's ``SingleCheckpointBarrierHandler`` in unaligned
    mode with its ``ChannelStatePersister`` per channel).

    The first barrier *n* on any channel triggers the snapshot at once (the task forwards
    the barrier with priority). From then until barrier *n* arrives on a channel, every
    DATA buffer polled from that channel was sent before the barrier but is processed
    after the snapshot: it is captured as input channel state (and still processed).
    DATA buffers a priority barrier overtook inside the gate are captured too. When every
    channel delivered *n* (or ended) the channel state of *n* is complete. A newer
    barrier before that aborts *n* as subsumed. No channel is ever blocked.

    A producer here finishes (after its final checkpoint) before its consumer has read
    all it sent, unlike Flink's, which waits until its data is processed. No barrier comes
    on a finished producer's channel, as if each had been sent after the channel's last
    buffer (Flink's ``triggerUnfinishedChannelsCheckpoint`` processes one on each
    unfinished channel): every buffer still to come on it is channel state. So that the
    checkpoint waits for the network, never for the task to work through that data, the
    task reads such channels to their end ahead of processing (``ReadToEnd``):

    - when the coordinator triggers *n* at the task itself, once every producer has
      finished (``on_trigger``): the snapshot is taken at once, every open channel read;
    - when *n* is pending here and a channel has not delivered it whose producer's
      operators have finished (its barriers said so, ``CheckpointBarrier.end_of_data``;
      the final checkpoint's barrier is the first): that channel alone is read, the others
      go on as usual. Its producer may still take *n* (its final checkpoint failed): then
      the read stops at its barrier.
    """

    def __init__(self, channels_per_gate: Sequence[int]) -> None:
        super().__init__(channels_per_gate)
        self._captured: dict[ChannelId, list[bytes]] = {}
        self._finishing: set[ChannelId] = set()
        """Channels whose producer's operators have finished: no record is added to them."""

    def awaits(self, gate_index: int, channel_index: int) -> bool:
        """The pending checkpoint still waits for this channel's barrier or END."""
        delivered = self._delivered
        channel = (gate_index, channel_index)
        return (
            delivered is not None and channel not in delivered and channel not in self._inputs.ended
        )

    def on_barrier(
        self,
        gate_index: int,
        channel_index: int,
        barrier: CheckpointBarrier,
        overtaken: Sequence[bytes] = (),
        unprocessed: Mapping[ChannelId, Sequence[bytes]] | None = None,
    ) -> list[Action]:
        if barrier.end_of_data:
            # Recorded even from a late barrier: the channel's producer is finishing.
            self._finishing.add(self._inputs.check(gate_index, channel_index))
        actions = super().on_barrier(gate_index, channel_index, barrier, overtaken, unprocessed)
        return actions + self._read_finishing()

    def _read_finishing(self) -> list[Action]:
        """A ``ReadToEnd`` of the finishing channels the pending checkpoint waits for."""
        if self._delivered is None or not self._finishing:
            return []
        waiting = frozenset(ch for ch in self._finishing if self.awaits(*ch))
        return [ReadToEnd(self._current, waiting)] if waiting else []

    def on_buffer(self, gate_index: int, channel_index: int, buffer: bytes) -> bool:
        delivered = self._delivered
        if delivered is None:
            return False
        channel = (gate_index, channel_index)
        if channel in delivered or channel in self._inputs.ended:
            return False
        self._captured.setdefault(channel, []).append(buffer)
        return True

    def on_end_of_partition(self, gate_index: int, channel_index: int) -> list[Action]:
        self._inputs.end(gate_index, channel_index)
        return self._complete_if_done()

    def on_trigger(
        self,
        barrier: CheckpointBarrier,
        unprocessed: Mapping[ChannelId, Sequence[bytes]] | None = None,
    ) -> list[Action]:
        """The coordinator triggered ``barrier``'s checkpoint at this task because every
        producer of the task has finished, while some channels have not delivered
        END_OF_PARTITION yet. ``unprocessed``: DATA buffers already read (a ``ReadToEnd``
        of an earlier checkpoint) that the task has not processed yet; they are in flight
        for this checkpoint too. A checkpoint not newer than the latest seen is dropped."""
        n = barrier.checkpoint_id
        if n <= self._current:
            logger.debug("dropping the trigger of checkpoint %d (current %d)", n, self._current)
            return []
        actions: list[Action] = []
        if self._delivered is not None:
            actions += self._subsume(n)
        self._current = n
        self._delivered = set()  # no channel delivers a barrier: each one ends instead
        actions += self._start(barrier, unprocessed)
        done = self._complete_if_done()
        if done:
            return [*actions, *done]
        return [*actions, ReadToEnd(n, self._inputs.all - self._inputs.ended)]

    def _subsume(self, newer: int) -> list[Action]:
        logger.info(
            "checkpoint %d subsumed by %d before its channel state was complete",
            self._current,
            newer,
        )
        return self._abort(AbortReason.CHECKPOINT_DECLINED_SUBSUMED)

    def _start(
        self,
        barrier: CheckpointBarrier,
        unprocessed: Mapping[ChannelId, Sequence[bytes]] | None = None,
    ) -> list[Action]:
        # Buffers read ahead and not processed yet are in flight for this checkpoint too,
        # ahead of anything captured later on their channel.
        self._captured = {
            self._inputs.check(*channel): list(buffers)
            for channel, buffers in (unprocessed or {}).items()
            if buffers
        }
        return [TriggerSnapshot(barrier, unaligned=True)]

    def _on_delivered(
        self, gate_index: int, channel_index: int, overtaken: Sequence[bytes]
    ) -> list[Action]:
        if overtaken:
            self._captured.setdefault((gate_index, channel_index), []).extend(overtaken)
        return self._complete_if_done()

    def _abort(self, reason: AbortReason) -> list[Action]:
        self._captured = {}
        return super()._abort(reason)

    def _complete_if_done(self) -> list[Action]:
        if self._delivered is None or not self._inputs.all_in(self._delivered):
            return []
        state, self._captured = self._captured, {}
        self._delivered = None
        return [ChannelStateComplete(self._current, state)]
