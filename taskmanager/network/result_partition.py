"""The producer side of one output edge of one task attempt (Flink's ``ResultPartition``).

The writing task thread calls ``emit``/``emit_event``/``finish``; readers (the I/O thread
for remote consumers, the consuming task's input gate for local ones) call ``attach``,
``poll``, ``add_credit`` and ``detach``. All of it is guarded by one Condition per
partition; ``emit`` waits on it while its subpartition is full, which is how
back-pressure reaches the writing task.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from weir.core.deployment import ResultPartitionDescriptor, ResultPartitionId
from weir.taskmanager.network.api import (
    BufferKind,
    NetworkConfig,
    PartitionClosedError,
    PartitionStats,
)
from weir.taskmanager.network.subpartition import PipelinedSubpartition, SubpartitionView

logger = logging.getLogger(__name__)


class PolledBuffer(NamedTuple):
    kind: BufferKind
    payload: bytes
    backlog: int
    """DATA buffers still queued behind this one."""
    more: bool
    """The view can take another buffer right away (it stays in its reader's queue)."""


class PartitionReleasedError(Exception):
    """A reader polled a partition released before its consumer saw END_OF_PARTITION."""

    def __init__(self, partition_id: ResultPartitionId, cause: BaseException | None) -> None:
        reason = f": {cause!r}" if cause is not None else " before it finished"
        super().__init__(f"result partition {partition_id} was released{reason}")
        self.partition_id = partition_id
        self.cause = cause


class ResultPartition:
    """Implements ``ResultPartitionWriter``; one writer thread, any number of readers."""

    def __init__(
        self,
        descriptor: ResultPartitionDescriptor,
        config: NetworkConfig,
        on_consumed: Callable[[ResultPartition], None] | None = None,
    ) -> None:
        self.partition_id: ResultPartitionId = descriptor.partition_id
        self.num_subpartitions = descriptor.num_subpartitions
        self.stats = PartitionStats()
        self._max_buffers = max(1, config.max_buffers_per_subpartition)
        # A blocked writer is woken once its subpartition has drained to half the bound,
        # not at the first free slot: it then refills several buffers per wakeup instead
        # of ping-ponging with the reader thread (and the GIL) for every buffer.
        self._resume_at = self._max_buffers // 2
        self._writer_waiting = False
        self._cond = threading.Condition()
        self._subpartitions = [PipelinedSubpartition() for _ in range(self.num_subpartitions)]
        self._on_consumed = on_consumed
        self._finished = False
        self._released = False
        self._cause: BaseException | None = None
        self._consumed_count = 0

    def __repr__(self) -> str:
        return f"ResultPartition({self.partition_id}, {self.num_subpartitions} subpartitions)"

    @property
    def is_released(self) -> bool:
        return self._released

    # -- writer side (the producing task's thread) -------------------------------------

    def emit(self, subpartition: int, buffer: bytes) -> None:
        sub = self._subpartitions[subpartition]
        with self._cond:
            if sub.data_count >= self._max_buffers and not self._released:
                self.stats.blocked_emits += 1
                started = time.perf_counter_ns()
                while sub.data_count >= self._max_buffers and not self._released:
                    self._writer_waiting = True
                    self._cond.wait()
                self._writer_waiting = False
                self.stats.back_pressured_ns += time.perf_counter_ns() - started
            self._check_writable()
            sub.queue.append((BufferKind.DATA, buffer))
            sub.data_count += 1
            self.stats.buffers_emitted += 1
            self.stats.max_queued = max(self.stats.max_queued, sub.data_count)
            view = sub.view
            if view is not None and not view.available and view.credit > 0:
                view.available = True
            else:
                view = None
        if view is not None:
            view.listener(view)

    def emit_event(self, subpartition: int, event: bytes) -> None:
        self._enqueue_event(subpartition, BufferKind.EVENT, event)

    def queued_buffers(self) -> int:
        return sum(sub.data_count for sub in self._subpartitions)

    def is_available(self) -> bool:
        # No lock: a stale answer only delays or hastens the writer by one check.
        bound = self._max_buffers
        return all(sub.data_count < bound for sub in self._subpartitions)

    def broadcast_event(self, event: bytes) -> None:
        for index in range(self.num_subpartitions):
            self._enqueue_event(index, BufferKind.EVENT, event)

    def emit_priority_event(self, event: bytes) -> list[list[bytes]]:
        """See ``ResultPartitionWriter.emit_priority_event``. One lock acquisition for all
        subpartitions, so no reader sees the event on one subpartition and a buffer
        emitted after it on another ahead of it."""
        overtaken: list[list[bytes]] = []
        to_notify: list[SubpartitionView] = []
        with self._cond:
            self._check_writable()
            for sub in self._subpartitions:
                overtaken.append(sub.add_priority_event(event))
                view = sub.view
                if view is not None and not view.available:
                    view.available = True
                    to_notify.append(view)
        for view in to_notify:
            view.listener(view)
        return overtaken

    def finish(self) -> None:
        with self._cond:
            self._check_writable()
            self._finished = True
        for index in range(self.num_subpartitions):
            self._enqueue_event(index, BufferKind.END_OF_PARTITION, b"", after_finish=True)

    def release(self, cause: BaseException | None = None) -> None:
        with self._cond:
            if self._released:
                return
            self._released = True
            self._cause = cause
            to_notify: list[SubpartitionView] = []
            for sub in self._subpartitions:
                sub.clear()
                view = sub.view
                # A consumer that already took END needs no word; every other reader must
                # come and find out (it raises PartitionReleasedError on its next poll).
                if view is not None and not sub.consumed and not view.available:
                    view.available = True
                    to_notify.append(view)
            self._cond.notify_all()
        if cause is not None:
            logger.info("result partition %s released: %r", self.partition_id, cause)
        else:
            logger.debug("result partition %s released", self.partition_id)
        for view in to_notify:
            view.listener(view)

    def _check_writable(self) -> None:
        if self._released:
            msg = (
                f"result partition {self.partition_id} was released (the task is being "
                "cancelled or the job failed); stop writing to it"
            )
            raise PartitionClosedError(msg) from self._cause
        if self._finished:
            msg = f"result partition {self.partition_id} already finished; nothing may follow"
            raise PartitionClosedError(msg)

    def _enqueue_event(
        self, subpartition: int, kind: BufferKind, payload: bytes, *, after_finish: bool = False
    ) -> None:
        sub = self._subpartitions[subpartition]
        with self._cond:
            if not after_finish:
                self._check_writable()
            elif self._released:
                return
            sub.queue.append((kind, payload))
            view = sub.view
            if view is not None and not view.available:
                view.available = True
            else:
                view = None
        if view is not None:
            view.listener(view)

    # -- reader side (I/O thread or consuming input gate) ------------------------------

    def attach(self, view: SubpartitionView) -> bool:
        """Make ``view`` the consumer of its subpartition. Returns True if the caller must
        queue the view for reading now (it has something to read); never calls the
        listener itself."""
        sub = self._subpartitions[view.index]
        with self._cond:
            if sub.view is not None and sub.view is not view:
                logger.warning(
                    "subpartition %d of %s was requested again; the new request replaces "
                    "the old one",
                    view.index,
                    self.partition_id,
                )
            sub.view = view
            view.partition = self
            readable = self._released or sub.is_sendable(view)
            if readable and not view.available:
                view.available = True
                return True
            return False

    def detach(self, view: SubpartitionView) -> None:
        sub = self._subpartitions[view.index]
        with self._cond:
            if sub.view is view:
                sub.view = None

    def add_credit(self, view: SubpartitionView, credit: int) -> bool:
        """Returns True if the view became readable and the caller must queue it."""
        sub = self._subpartitions[view.index]
        with self._cond:
            view.credit += credit
            if not view.available and (self._released or sub.is_sendable(view)):
                view.available = True
                return True
            return False

    def poll(self, view: SubpartitionView) -> PolledBuffer | None:
        """The next buffer for ``view``, or None when it has nothing it may take now (the
        view then leaves its reader's queue until the next notification)."""
        sub = self._subpartitions[view.index]
        consumed_all = False
        with self._cond:
            if self._released and not sub.consumed:
                view.available = False
                raise PartitionReleasedError(self.partition_id, self._cause)
            if not sub.is_sendable(view):
                view.available = False
                return None
            kind, payload = sub.queue.popleft()
            if kind == BufferKind.DATA:
                view.credit -= 1
                sub.data_count -= 1
                if self._writer_waiting and sub.data_count <= self._resume_at:
                    self._writer_waiting = False
                    self._cond.notify_all()
                self.stats.buffers_sent += 1
            elif kind == BufferKind.END_OF_PARTITION:
                sub.consumed = True
                self._consumed_count += 1
                consumed_all = self._consumed_count == self.num_subpartitions
            more = sub.is_sendable(view)
            if not more:
                view.available = False
            backlog = sub.data_count
        if consumed_all and self._on_consumed is not None:
            self._on_consumed(self)
        return PolledBuffer(kind, payload, backlog, more)
