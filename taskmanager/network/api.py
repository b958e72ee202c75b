"""The data plane as tasks see it: result partitions to write, input gates to read.

Tasks hand the network whole serialized buffers (``bytes``); partitioning records and
serializing them is the task's business (``weir.taskmanager.record_writer``). The network
moves buffers and events in order per channel, with credit-based flow control, over
TCP between TaskManagers and in memory inside one.

Threading: a ``ResultPartitionWriter`` and an ``InputGate`` are used by exactly one task
thread each; the network's own I/O thread is the only other party. Nothing here takes
a lock per record; at most one per buffer.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from weir.core.deployment import InputGateDescriptor, ResultPartitionDescriptor, ResultPartitionId
from weir.core.security import SecurityConfig


class BufferKind(enum.IntEnum):
    DATA = 0
    """Serialized records; costs one credit."""
    EVENT = 1
    """A serialized task event (watermark, checkpoint barrier, ...), in order with the data."""
    END_OF_PARTITION = 2
    """The producer finished; nothing follows on this channel."""
    PRIORITY_EVENT = 3
    """A task event that overtook the data queued ahead of it (an unaligned checkpoint
    barrier, sent with ``emit_priority_event``). Priority events keep their order among
    themselves; the task treats one like any EVENT."""


FatalErrorHandler = Callable[[str], None]
"""Told, once and with the reason, that a network environment can no longer move data
(Flink's ``FatalErrorHandler``): called on the network's I/O thread as it ends, so it
must only hand the news on (the TaskExecutor stops, and the ResourceManager replaces it)."""


class PartitionClosedError(Exception):
    """Raised in a task thread blocked on the network when its partition or gate is
    released (the task is being cancelled or the job failed)."""


@dataclass(frozen=True, slots=True)
class NetworkConfig:
    security: SecurityConfig = field(default_factory=SecurityConfig)
    """TLS (``security.ssl.internal.*``) and the token of every data connection."""
    data_ports: tuple[int, int] = (0, 0)
    """The data server's port: the first free one of this range (``taskmanager.data.port``);
    ``(0, 0)`` lets the system pick."""
    segment_size: int = 32 * 1024
    buffers_per_channel: int = 2
    """Exclusive credits each input channel grants at start."""
    floating_buffers_per_gate: int = 8
    """Extra credits a gate lends to channels that announce a backlog."""
    max_buffers_per_subpartition: int = 10
    """Buffers a subpartition may hold before ``emit`` blocks the writer."""
    handshake_timeout_ms: int = 10_000
    """How long the data server waits for a new connection to authenticate before closing
    it (``taskmanager.network.handshake-timeout``)."""
    max_unauthenticated_connections_per_host: int = 64
    """Connections one peer address may hold unauthenticated; past it the oldest is
    closed (``taskmanager.network.max-unauthenticated-connections-per-host``)."""
    max_unauthenticated_connections: int = 256
    """The same for all peers together (``taskmanager.network.max-unauthenticated-connections``)."""


@dataclass(slots=True)
class PartitionStats:
    """Counters a test or a metric can read; updated under the partition's lock."""

    buffers_emitted: int = 0
    buffers_sent: int = 0
    max_queued: int = 0
    """The most buffers ever queued in one subpartition at once."""
    blocked_emits: int = 0
    """How often ``emit`` had to wait for room (back-pressure)."""
    back_pressured_ns: int = 0
    """Time ``emit`` spent waiting for room (Flink's backPressuredTimeMsPerSecond)."""


@dataclass(slots=True)
class InputGateStats:
    """Counters a test or a metric can read; updated under the gate's lock."""

    buffers_received: int = 0
    """DATA buffers that arrived over TCP (local channels are read in place)."""
    buffers_polled: int = 0
    events_polled: int = 0
    max_buffered_per_channel: int = 0
    """The most DATA buffers ever held at once by one remote channel (<= its credits)."""
    credits_announced: int = 0
    idle_ns: int = 0
    """Time ``poll`` spent waiting for input (Flink's idleTimeMsPerSecond)."""


class ResultPartitionWriter(Protocol):
    partition_id: ResultPartitionId
    num_subpartitions: int
    stats: PartitionStats

    def emit(self, subpartition: int, buffer: bytes) -> None:
        """Queue a data buffer; blocks while the subpartition already holds
        ``max_buffers_per_subpartition`` buffers. Raises PartitionClosedError if released."""
        ...

    def emit_event(self, subpartition: int, event: bytes) -> None:
        """Queue an event behind the data already queued; never blocks for credit."""
        ...

    def queued_buffers(self) -> int:
        """DATA buffers queued in the subpartitions (Flink's outputQueueLength); a hint
        read without the lock."""
        ...

    def is_available(self) -> bool:
        """No subpartition is full, so the next ``emit`` does not block (Flink's
        ``isAvailable``). A hint: the consumer may drain or the writer fill meanwhile."""
        ...

    def broadcast_event(self, event: bytes) -> None: ...

    def emit_priority_event(self, event: bytes) -> list[list[bytes]]:
        """Put ``event`` at the head of every subpartition's queue (behind earlier priority
        events only), ahead of the data queued there; never blocks for credit.

        Returns, per subpartition, the DATA buffers it overtook, in queue order: they
        are still sent (after the event), and an unaligned checkpoint persists them as
        output channel state. Buffers a reader already took from the queue are not
        overtaken: for a remote consumer that is what the I/O thread moved into the
        connection's output buffer or the socket (at most the consumer's credit for the
        channel); they reach the consumer's input channel before the event, where the
        gate lets the event overtake them again (``InputGate.priority_event_overtaken``).
        Raises PartitionClosedError if released or finished."""
        ...

    def finish(self) -> None:
        """Send END_OF_PARTITION on every subpartition. The partition stays until the
        consumers have read everything, then the network releases it."""
        ...

    def release(self, cause: BaseException | None = None) -> None:
        """Drop queued buffers and wake a blocked ``emit`` (it raises PartitionClosedError).
        Idempotent."""
        ...


class InputGate(Protocol):
    """All inputs of one task, over all its input edges."""

    stats: InputGateStats

    def queued_buffers(self) -> int:
        """DATA buffers received and not yet polled (Flink's inputQueueLength); a hint
        read without the lock."""
        ...

    @property
    def num_gates(self) -> int: ...

    def num_channels(self, gate_index: int) -> int: ...

    def poll(self, timeout: float | None) -> tuple[int, int, BufferKind, bytes] | None:
        """The next ``(gate_index, channel_index, kind, payload)`` in arrival order
        (order is kept per channel), or ``None`` after ``timeout`` seconds or a
        ``wakeup()``. Polling a DATA buffer returns its credit to the sender.
        Raises PartitionClosedError once closed, or NetworkError if a producer's
        connection was lost."""
        ...

    def block_channel(self, gate_index: int, channel_index: int) -> None:
        """Stop returning the channel's buffers and events from ``poll`` (checkpoint
        alignment). They stay queued in the gate, so their credits are not returned and
        the producer stops sending once its credit runs out; a local producer blocks
        when its subpartition is full. Idempotent."""
        ...

    def unblock_all(self) -> None:
        """Deliver every blocked channel again, in the order they were blocked."""
        ...

    def priority_event_overtaken(self, gate_index: int, channel_index: int) -> list[bytes]:
        """The DATA buffers that the PRIORITY_EVENT last polled from this channel jumped
        inside the gate (received before it, not yet polled; they are still polled
        afterwards, in order). Returns them once; ``[]`` for a local channel, whose
        producer reports what it overtook instead."""
        ...

    def wakeup(self) -> None:
        """Make a blocked (or the next) ``poll`` return ``None`` at once. Thread-safe."""
        ...

    def is_finished(self) -> bool:
        """Every channel delivered END_OF_PARTITION and it was polled."""
        ...

    def close(self) -> None:
        """Release everything; idempotent; wakes a blocked ``poll`` (PartitionClosedError)."""
        ...


class NetworkEnvironment(Protocol):
    """One per TaskExecutor."""

    def start(self, on_fatal_error: FatalErrorHandler | None = None) -> int:
        """Bind the data server on the configured host; return its port. If the I/O
        thread ever ends without ``close`` (a bug: no peer's bytes can end it), its port
        is closed and ``on_fatal_error`` is called once with the reason."""
        ...

    def create_result_partition(
        self, descriptor: ResultPartitionDescriptor
    ) -> ResultPartitionWriter: ...

    def create_input_gate(self, descriptors: tuple[InputGateDescriptor, ...]) -> InputGate:
        """One InputGate over all the task's input edges; gate ``i`` is ``descriptors[i]``."""
        ...

    def close(self) -> None:
        """Stop the I/O thread and close every socket; leaves no thread behind."""
        ...
