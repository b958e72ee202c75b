"""Input channels: one per (consumer task, producer subpartition) pair.

A ``LocalInputChannel`` reads its producer's subpartition in memory when its task polls;
a ``RemoteInputChannel`` holds what the I/O thread received over TCP. The gate calls
``take`` under its own lock; channels never lock anything else except, for a local
channel, the producer partition's lock (always in the order gate -> partition; producers
never hold their partition lock while notifying a gate).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from weir.core.deployment import InputChannelDescriptor
from weir.core.errors import NetworkError, ProducerFailedError
from weir.taskmanager.network.api import BufferKind
from weir.taskmanager.network.credit_based_channel import ChannelCredit, FloatingBufferPool
from weir.taskmanager.network.result_partition import PartitionReleasedError, ResultPartition
from weir.taskmanager.network.result_partition_manager import ResultPartitionManager
from weir.taskmanager.network.subpartition import UNLIMITED_CREDIT, SubpartitionView

if TYPE_CHECKING:
    from weir.taskmanager.network.input_gate import DefaultInputGate

logger = logging.getLogger(__name__)

Taken = tuple[BufferKind, bytes, bool]
"""``(kind, payload, more)``: ``more`` says the channel has another buffer ready."""


class InputChannel:
    """What the gate needs of a channel."""

    def __init__(self, gate_index: int, channel_index: int, descriptor: InputChannelDescriptor):
        self.gate_index = gate_index
        self.channel_index = channel_index
        self.descriptor = descriptor
        self.finished = False
        """END_OF_PARTITION was polled."""
        self.buffered = 0
        """DATA buffers received and not yet polled (always 0 for a local channel)."""

    def describe(self) -> str:
        d = self.descriptor
        loc = d.producer_location
        return (
            f"subpartition {d.subpartition_index} of partition {d.partition_id} "
            f"from {loc.host}:{loc.data_port} (TaskManager {loc.resource_id})"
        )

    def take(self) -> Taken | None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class LocalInputChannel(InputChannel):
    """Reads a subpartition of a partition produced in the same environment."""

    def __init__(
        self,
        gate_index: int,
        channel_index: int,
        descriptor: InputChannelDescriptor,
        manager: ResultPartitionManager,
        enqueue: Callable[[InputChannel], None],
    ) -> None:
        super().__init__(gate_index, channel_index, descriptor)
        self._manager = manager
        self._enqueue = enqueue
        self._view = SubpartitionView(
            descriptor.subpartition_index, UNLIMITED_CREDIT, self._on_available
        )

    def request(self) -> None:
        self._manager.request(self.descriptor.partition_id, self._on_partition_ready)

    def _on_partition_ready(self, partition: ResultPartition) -> None:
        if self.descriptor.subpartition_index >= partition.num_subpartitions:
            logger.error(
                "%s does not exist: the partition has %d subpartitions",
                self.describe(),
                partition.num_subpartitions,
            )
            return
        if partition.attach(self._view):
            self._enqueue(self)

    def _on_available(self, _view: SubpartitionView) -> None:
        self._enqueue(self)

    def take(self) -> Taken | None:
        partition = self._view.partition
        if not isinstance(partition, ResultPartition):
            return None
        try:
            polled = partition.poll(self._view)
        except PartitionReleasedError as exc:
            msg = (
                f"lost {self.describe()}: its producer ended first: {exc}; the producer's own "
                "failure is the cause, this task fails over with it"
            )
            raise ProducerFailedError(msg) from exc
        if polled is None:
            return None
        return polled.kind, polled.payload, polled.more

    def close(self) -> None:
        self._manager.cancel_request(self.descriptor.partition_id, self._on_partition_ready)
        partition = self._view.partition
        if isinstance(partition, ResultPartition):
            partition.detach(self._view)


class RemoteInputChannel(InputChannel):
    """Buffers received over TCP for one subpartition, with its credit state."""

    def __init__(
        self,
        gate_index: int,
        channel_index: int,
        descriptor: InputChannelDescriptor,
        *,
        channel_id: int,
        exclusive_credits: int,
        pool: FloatingBufferPool,
    ) -> None:
        super().__init__(gate_index, channel_index, descriptor)
        self.channel_id = channel_id
        self.credit = ChannelCredit(exclusive_credits, pool, owner=self)
        self.queue: deque[tuple[BufferKind, bytes] | NetworkError] = deque()
        self.queued = False
        """The channel sits in the gate's queue of channels with something to poll."""
        self.gate: DefaultInputGate | None = None

    def take(self) -> Taken | None:
        if not self.queue:
            return None
        head = self.queue[0]
        if isinstance(head, NetworkError):
            # Keep the error at the head: every later poll fails the same way.
            raise head
        self.queue.popleft()
        kind, payload = head
        if kind == BufferKind.DATA:
            self.buffered -= 1
        return kind, payload, bool(self.queue)

    def close(self) -> None:
        """Nothing to do here: the gate asks the connection manager to cancel the request."""
