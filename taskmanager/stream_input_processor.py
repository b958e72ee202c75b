"""The input processor of a Task with inputs (Flink's StreamInputProcessor): it reads the
input gate a buffer at a time, deserialises the records and hands them to the chain,
merges watermarks and idleness per input in watermark valves, and carries out what the
barrier handler decides at each checkpoint barrier (block, unblock, snapshot, abort) and
at a trigger after every producer finished (an unaligned checkpoint reads the rest of a
finished producer's input ahead of processing, as channel state).
Also the replay of in-flight input buffers restored from an unaligned checkpoint.

Everything here runs on the task thread. The task hands it, in its constructor, the gate,
the chain, its checkpointing, how to pace batches, and three of its own steps: serving
its mailbox between two batches, checking for a cancel, and ending its input. The
producer half of the data plane is ``weir.taskmanager.record_writer``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from weir.core.columnar import ColumnBatch
from weir.core.deployment import InputGateDescriptor
from weir.core.serializers import deserialize_records
from weir.taskmanager.checkpointing.barrier_handler import (
    AbortCheckpoint,
    Action,
    BlockChannel,
    ChannelId,
    ChannelStateComplete,
    CheckpointBarrierHandler,
    ReadToEnd,
    TriggerSnapshot,
    UnalignedBarrierHandler,
    UnblockAll,
)
from weir.taskmanager.checkpointing.subtask_checkpoint import SubtaskCheckpointCoordinator
from weir.taskmanager.network.api import BufferKind, InputGate
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.output_flusher import OutputFlusher
from weir.taskmanager.record_writer import BufferTimeout
from weir.taskmanager.task_events import (
    CheckpointBarrier,
    EndOfData,
    Watermark,
    WatermarkStatus,
    deserialize_event,
)
from weir.taskmanager.watermark_valve import StatusWatermarkValve

logger = logging.getLogger(__name__)

_DATA = BufferKind.DATA
_END = BufferKind.END_OF_PARTITION
# How long one poll of a ReadToEnd waits before the task looks for a cancel again.
_READ_AHEAD_POLL_S = 0.1


class StreamInputProcessor:
    """See the module docstring. ``run`` is the task's loop; the other public methods are
    what the task calls from its mailbox actions, between two batches."""

    def __init__(
        self,
        gate: InputGate,
        input_gates: Sequence[InputGateDescriptor],
        chain: OperatorChain,
        *,
        checkpointing: SubtaskCheckpointCoordinator | None,
        barrier_handler: CheckpointBarrierHandler | None,
        flusher: OutputFlusher,
        buffer_timeout: BufferTimeout,
        bundle_size: int,
        serve_mailbox: Callable[[], None],
        check_canceled: Callable[[], None],
        end_of_input: Callable[[], None],
        task_name: str,
    ) -> None:
        """``input_gates``: the descriptors of ``gate``'s gates, in its order (gate ``i``
        feeds the head's input ``input_gates[i].edge.input_index``). ``checkpointing`` and
        ``barrier_handler``: None when the job does not checkpoint. ``bundle_size``: the
        most records handed to the chain at once; a larger buffer goes in bundles, the
        mailbox served in between. ``serve_mailbox``: the task's step between two
        batches (its actions, a cancel, a due flush); ``check_canceled`` raises if the
        task was cancelled; ``end_of_input``: no record follows on any channel."""
        self._gate = gate
        self._input_gates = tuple(input_gates)
        self._chain = chain
        self._checkpointing = checkpointing
        self._barrier_handler = barrier_handler
        self._flusher = flusher
        self._buffer_timeout = buffer_timeout
        self._bundle_size = bundle_size
        self._serve_mailbox = serve_mailbox
        self._check_canceled = check_canceled
        self._end_of_input = end_of_input
        self._task_name = task_name
        self._channel_count = sum(len(g.channels) for g in self._input_gates)
        self._open_channels = self._channel_count
        """Input channels that have not delivered END_OF_PARTITION yet."""
        self._data_ended: set[ChannelId] = set()
        """The channels after whose last record we are."""
        self._pending_trigger: CheckpointBarrier | None = None
        """A checkpoint triggered here because every producer finished, taken once their
        channels have ended (an aligned one)."""
        self._read_ahead: deque[tuple[int, int, BufferKind, bytes]] = deque()
        """Input of finishing producers read ahead of processing (``ReadToEnd``), to be
        processed in order, in turn with the other channels."""
        self._reading: set[ChannelId] | None = None
        """The channels a ``ReadToEnd`` in progress reads."""
        self._held_back: set[ChannelId] = set()
        """Channels blocked in the gate while some of their input waits in
        ``_read_ahead`` (a read stopped at their barrier, not at their end)."""
        self._in_bundles = False
        """Processing one buffer a bundle at a time (serving the mailbox in between)."""
        self._deferred_trigger: CheckpointBarrier | None = None
        """A trigger served between two bundles, taken when the buffer is done."""
        self._alignment_started: float | None = None
        # One watermark valve per input of the head operator, over the channels of every
        # gate that feeds it (a union feeds one input from several gates): per gate, its
        # valve and the index of the gate's first channel within that valve.
        self._gate_channel_base: list[int] = []
        sizes: dict[int, int] = {}
        for g in self._input_gates:
            index = g.edge.input_index
            self._gate_channel_base.append(sizes.get(index, 0))
            sizes[index] = sizes.get(index, 0) + len(g.channels)
        valves = {index: StatusWatermarkValve(n) for index, n in sizes.items()}
        self._gate_valves = [valves[g.edge.input_index] for g in self._input_gates]
        # Counted by the task thread per buffer, never per record (numRecordsIn,
        # numBytesIn); read by other threads without a lock.
        self.records_in = 0
        self.bytes_in = 0

    def input_watermark(self) -> int:
        """The lowest watermark over the inputs of the head (any thread)."""
        return min(v.watermark for v in self._gate_valves)

    def run(self) -> None:
        """Process the input until every channel has ended (task thread)."""
        chain = self._chain
        gate = self._gate
        input_gates = self._input_gates
        inputs = [chain.input(g.edge.input_index) for g in input_gates]
        if self._open_channels == 0:
            self._end_of_input()
            return
        timeout = self._buffer_timeout
        flush_after_batch = timeout.flush_after_batch
        serve = self._serve_mailbox
        poll = gate.poll
        flusher = self._flusher
        bundle_size = self._bundle_size
        # A batch of columns goes whole to a head that reads columns: its cost per record
        # is a column operation's, not a Python call's, which the bundle size bounds.
        whole_columns = [chain.takes_columns(g.edge.input_index) for g in input_gates]
        # Unaligned checkpoints see every DATA buffer before it is processed (it may be
        # in-flight channel state); one check per buffer, not per record.
        capture = (
            self._barrier_handler.on_buffer
            if isinstance(self._barrier_handler, UnalignedBarrierHandler)
            else None
        )
        # What a ReadToEnd read ahead of processing: the barrier handler has seen it. It
        # is processed in turn with what the other channels bring, so that they, and the
        # barriers they bring, never wait for all of it.
        read_ahead = self._read_ahead
        gate_turn = False
        while True:
            serve()
            if read_ahead:
                gate_turn = not gate_turn
                item = poll(0) if gate_turn else None
                seen = item is None
                if seen:
                    item = read_ahead.popleft()
                    if not read_ahead and self._held_back:
                        self._held_back.clear()
                        gate.unblock_all()
            else:
                seen = False
                item = poll(timeout.poll_timeout())
            if item is None:
                continue
            gate_index, channel, kind, payload = item
            if kind == _DATA:
                if capture is not None and not seen:
                    capture(gate_index, channel, payload)
                records, timestamps = deserialize_records(payload)
                # Counted per buffer, never per record (numRecordsIn, numBytesIn).
                self.records_in += len(records)
                self.bytes_in += len(payload)
                if len(records) > bundle_size and not (
                    whole_columns[gate_index] and type(records) is ColumnBatch
                ):
                    self._process_in_bundles(inputs[gate_index], records, timestamps)
                else:
                    with flusher:  # inside a batch (OutputFlusher's contract)
                        inputs[gate_index](records, timestamps)
                if flush_after_batch:
                    chain.flush()
            elif kind == _END:
                if self._barrier_handler is not None and not seen:
                    self._perform(self._barrier_handler.on_end_of_partition(gate_index, channel))
                advanced = self._gate_valves[gate_index].channel_ended(
                    self._gate_channel_base[gate_index] + channel
                )
                if advanced is not None:
                    chain.input_watermark(input_gates[gate_index].edge.input_index)(advanced)
                self._channel_data_ended(gate_index, channel)
                self._open_channels -= 1
                if self._open_channels == 0:
                    trigger, self._pending_trigger = self._pending_trigger, None
                    if trigger is not None and self._checkpointing is not None:
                        # Every input has ended: nothing is in flight to overtake, so the
                        # checkpoint is taken aligned (no channel state to wait for).
                        aligned = dataclasses.replace(trigger, unaligned=False)
                        self._checkpointing.checkpoint(aligned)
                    return
            else:
                self._on_event(gate_index, channel, payload)

    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> None:
        """Checkpoint ``barrier`` triggered at this task because every producer finished
        (FLIP-147), with their last records perhaps still on the way. Once every input
        has ended, nothing is in flight and nothing is overtaken: taken aligned at once.
        With channels still open, unaligned, it is taken at once, its in-flight input
        read to the end (Flink's triggerUnfinishedChannelsCheckpoint); otherwise once
        every channel has ended, behind the last record (the barrier lies after it)."""
        if self._open_channels == 0:
            if self._checkpointing is not None:
                self._checkpointing.checkpoint(dataclasses.replace(barrier, unaligned=False))
            return
        self._trigger_with_open_channels(barrier)

    def abort_checkpoint(self, checkpoint_id: int) -> None:
        """The coordinator aborted ``checkpoint_id``: stop aligning for it."""
        if self._barrier_handler is not None:
            self._perform(self._barrier_handler.on_checkpoint_aborted(checkpoint_id))

    def replay(self, buffers: Mapping[ChannelId, Sequence[bytes]]) -> None:
        """Recovery from an unaligned checkpoint, before any new input: process the input
        that was in flight (the restored state has not seen it), per channel in its
        original order."""
        chain = self._chain
        gates = self._input_gates
        for (g, _), channel_buffers in sorted(buffers.items()):
            process = chain.input(gates[g].edge.input_index)
            for buffer in channel_buffers:
                self._check_canceled()
                process(*deserialize_records(buffer))

    def _trigger_with_open_channels(self, barrier: CheckpointBarrier) -> None:
        handler = self._barrier_handler
        if not barrier.unaligned or not isinstance(handler, UnalignedBarrierHandler):
            self._pending_trigger = barrier
            return
        if self._in_bundles:
            # Between two bundles of one buffer: the rest of it is neither in the
            # snapshot nor captured. Taken once the buffer is done.
            self._deferred_trigger = barrier
            return
        self._perform(handler.on_trigger(barrier, self._unprocessed()))

    def _unprocessed(self) -> dict[ChannelId, list[bytes]]:
        """The DATA buffers read ahead and not processed yet, per channel."""
        unprocessed: dict[ChannelId, list[bytes]] = {}
        for gate_index, channel, kind, payload in self._read_ahead:
            if kind == _DATA:
                unprocessed.setdefault((gate_index, channel), []).append(payload)
        return unprocessed

    def _read_to_end(self, channels: frozenset[ChannelId]) -> None:
        """``ReadToEnd``: read ``channels`` (their producers' operators have finished)
        into ``_read_ahead`` while the pending checkpoint awaits them, reporting every
        buffer, END and barrier to the barrier handler as it comes; ``run`` then
        processes the buffers and other events in order. The other channels are blocked
        in the gate meanwhile (unaligned checkpoints block nothing else): what they bring
        is not bounded."""
        reading = self._reading
        if reading is not None:
            # A barrier read ahead started another checkpoint: the loop below reads on.
            reading.update(channels)
            return
        gate, handler = self._gate, self._barrier_handler
        assert isinstance(handler, UnalignedBarrierHandler)
        reading = self._reading = set(channels)
        for g, gate_descriptor in enumerate(self._input_gates):
            for c in range(len(gate_descriptor.channels)):
                if (g, c) not in reading:
                    gate.block_channel(g, c)
        read_ahead = self._read_ahead
        stopped_at_barrier: set[ChannelId] = set()
        try:
            while reading:
                self._check_canceled()
                item = gate.poll(_READ_AHEAD_POLL_S)
                if item is not None:
                    self._read_ahead_item(item, stopped_at_barrier)
                reading.intersection_update({ch for ch in reading if handler.awaits(*ch)})
        finally:
            self._reading = None
            gate.unblock_all()
        # A channel read up to its barrier has more to come: it waits in the gate until
        # what was read ahead of it is processed, so that its order holds.
        waiting = {(g, c) for g, c, _, _ in read_ahead}
        ended = {(g, c) for g, c, kind, _ in read_ahead if kind == _END}
        self._held_back |= (stopped_at_barrier & waiting) - ended
        for ch in self._held_back:
            gate.block_channel(*ch)

    def _read_ahead_item(
        self, item: tuple[int, int, BufferKind, bytes], stopped_at_barrier: set[ChannelId]
    ) -> None:
        """One item of a ``ReadToEnd``, reported to the barrier handler as it is read."""
        handler = self._barrier_handler
        assert isinstance(handler, UnalignedBarrierHandler)
        gate_index, channel, kind, payload = item
        if kind == _DATA:
            handler.on_buffer(gate_index, channel, payload)
            self._read_ahead.append(item)
        elif kind == _END:
            self._read_ahead.append(item)
            self._perform(handler.on_end_of_partition(gate_index, channel))
        else:
            event = deserialize_event(payload)
            if not isinstance(event, CheckpointBarrier):
                self._read_ahead.append(item)  # watermarks, EndOfData: in order, later
                return
            stopped_at_barrier.add((gate_index, channel))
            overtaken = (
                self._gate.priority_event_overtaken(gate_index, channel) if event.unaligned else []
            )
            self._perform(
                handler.on_barrier(gate_index, channel, event, overtaken, self._unprocessed())
            )

    def _process_in_bundles(self, process: Any, records: list[Any], timestamps: Any) -> None:
        """A buffer of more records than the bundle size, a bundle at a time, serving the
        mailbox in between (timers, periodic watermarks, a due flush)."""
        size = self._bundle_size
        flusher = self._flusher
        self._in_bundles = True
        try:
            for start in range(0, len(records), size):
                if start:
                    self._serve_mailbox()
                end = start + size
                with flusher:  # inside a batch (OutputFlusher's contract)
                    process(
                        records[start:end], None if timestamps is None else timestamps[start:end]
                    )
        finally:
            self._in_bundles = False
        deferred, self._deferred_trigger = self._deferred_trigger, None
        if deferred is not None:
            self._trigger_with_open_channels(deferred)

    def _channel_data_ended(self, gate_index: int, channel: int) -> None:
        """No record follows on this channel (EndOfData, or END_OF_PARTITION); after the
        last channel, the input has ended."""
        ended = self._data_ended
        ended.add((gate_index, channel))
        if len(ended) == self._channel_count:
            self._end_of_input()

    def _on_watermark_event(
        self, gate_index: int, channel: int, event: Watermark | WatermarkStatus
    ) -> None:
        chain = self._chain
        valve = self._gate_valves[gate_index]
        flat = self._gate_channel_base[gate_index] + channel
        input_index = self._input_gates[gate_index].edge.input_index
        if isinstance(event, Watermark):
            advanced = valve.input_watermark(flat, event.timestamp)
            idle = None
        else:
            advanced, idle = valve.input_status(flat, event.idle)
        if advanced is not None:
            chain.input_watermark(input_index)(advanced)
        if idle is not None:
            chain.input_watermark_status(input_index)(idle)

    def _on_event(self, gate_index: int, channel: int, payload: bytes) -> None:
        event = deserialize_event(payload)
        if isinstance(event, Watermark | WatermarkStatus):
            self._on_watermark_event(gate_index, channel, event)
            return
        if isinstance(event, EndOfData):
            self._channel_data_ended(gate_index, channel)
            return
        if isinstance(event, CheckpointBarrier):
            handler = self._barrier_handler
            if handler is None:
                return
            overtaken: list[bytes] = []
            if event.unaligned:
                # Buffers received before the barrier that it jumped inside the gate.
                overtaken = self._gate.priority_event_overtaken(gate_index, channel)
            if isinstance(handler, UnalignedBarrierHandler) and self._read_ahead:
                # What was read ahead and not processed yet is in flight for it too.
                actions = handler.on_barrier(
                    gate_index, channel, event, overtaken, self._unprocessed()
                )
            else:
                actions = handler.on_barrier(gate_index, channel, event, overtaken)
            self._perform(actions)
            return
        logger.debug(
            "task %s: %r on gate %d channel %d not handled yet",
            self._task_name,
            event,
            gate_index,
            channel,
        )

    def _perform(self, actions: list[Action]) -> None:
        """Carry out what the barrier handler decided, in order (task thread)."""
        gate = self._gate
        for action in actions:
            if isinstance(action, BlockChannel):
                if self._alignment_started is None:
                    self._alignment_started = time.monotonic()
                gate.block_channel(action.gate_index, action.channel_index)
            elif isinstance(action, UnblockAll):
                gate.unblock_all()
            elif isinstance(action, TriggerSnapshot):
                started = self._alignment_started
                self._alignment_started = None
                alignment_ms = 0 if started is None else int((time.monotonic() - started) * 1000)
                if self._checkpointing is not None:
                    self._checkpointing.checkpoint(action.barrier, alignment_ms)
            elif isinstance(action, ChannelStateComplete):
                if self._checkpointing is not None:
                    self._checkpointing.complete_channel_state(
                        action.checkpoint_id, action.channel_state
                    )
            elif isinstance(action, AbortCheckpoint):
                self._alignment_started = None
                if self._checkpointing is not None:
                    self._checkpointing.decline(action.checkpoint_id, action.reason.value)
            elif isinstance(action, ReadToEnd):
                self._read_to_end(action.channels)
