"""The loop of a source Task (Flink's SourceStreamTask): a reader polled a batch at a
time, or a legacy ``SourceFunction`` run on the task thread with a context that batches
what it collects; between two batches the task serves its mailbox (checkpoint
triggers, timers, a due flush) and sees a cancel.

``SourceLoop`` is a part of ``Task``, run on the task thread; it uses the task's fields
declared below, which ``Task.__init__`` and the setup set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from weir.core.deployment import TaskDeploymentDescriptor
from weir.taskmanager.mailbox import Mailbox
from weir.taskmanager.network.api import ResultPartitionWriter
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.operators.source import (
    SourceCanceledError,
    SourceFunctionContext,
    SourceOperator,
    source_function_batching,
)
from weir.taskmanager.output_flusher import OutputFlusher
from weir.taskmanager.record_writer import BufferTimeout
from weir.taskmanager.task_errors import TaskCanceledError

# How long an idle source (``poll_batch`` returned []) waits before polling again; a
# mailbox action or cancel ends the wait early. Short, since readers must not block.
_IDLE_SOURCE_WAIT_S = 0.005


class SourceLoop:
    # What the task provides (Task.__init__, TaskSetup).
    tdd: TaskDeploymentDescriptor
    mailbox: Mailbox
    _source: SourceOperator | None
    _chain: OperatorChain | None
    _partitions: list[ResultPartitionWriter]
    _unaligned: bool
    _cancel_requested: bool
    _buffer_timeout: BufferTimeout
    _bundle_size: int
    _flusher: OutputFlusher
    idle_ns: int
    back_pressured_ns: int
    _serve_actions: Callable[[], None]
    _serve_mailbox: Callable[[], None]

    def _run_source(self) -> None:
        source = self._source
        assert source is not None
        if source.source_function is not None:
            self._run_source_function(source)
            return
        reader = source.reader
        assert reader is not None
        chain = self._chain
        assert chain is not None
        timeout = self._buffer_timeout
        flush_after_batch = timeout.flush_after_batch
        serve = self._serve_mailbox
        poll_batch = reader.poll_batch
        output = source.emit
        n = self._bundle_size
        flusher = self._flusher
        # Unaligned checkpoints must not wait for a back-pressured source to get its
        # batch out: it reads only when its output has room, and serves the mailbox (a
        # checkpoint trigger) meanwhile, as Flink's StreamTask does. Aligned barriers
        # queue behind the data anyway, so that mode keeps the plain loop.
        # Nor does it flush a partly filled buffer then, which would block as well.
        partitions = self._partitions if self._unaligned else []
        while True:
            if partitions and not all(p.is_available() for p in partitions):
                self._serve_actions()
                started = time.perf_counter_ns()
                self.mailbox.wait(_IDLE_SOURCE_WAIT_S)
                self.back_pressured_ns += time.perf_counter_ns() - started
                continue
            serve()
            batch = poll_batch(n)
            if batch is None:
                return
            if batch:
                with flusher:  # inside a batch (OutputFlusher's contract)
                    output(batch, None)
                if flush_after_batch:
                    chain.flush()
            else:
                wait = timeout.poll_timeout()
                started = time.perf_counter_ns()
                self.mailbox.wait(
                    _IDLE_SOURCE_WAIT_S if wait is None else min(wait, _IDLE_SOURCE_WAIT_S)
                )
                self.idle_ns += time.perf_counter_ns() - started

    def _run_source_function(self, source: SourceOperator) -> None:
        chain = self._chain
        assert chain is not None
        flush_after_batch = self._buffer_timeout.flush_after_batch

        def serve() -> None:
            if self._cancel_requested:
                raise SourceCanceledError
            if flush_after_batch:
                chain.flush()
            self._serve_mailbox()

        emit = source.emit
        flusher = self._flusher

        def output(batch: list[Any], timestamps: list[int | None] | None) -> None:
            with flusher:  # inside a batch (OutputFlusher's contract)
                emit(batch, timestamps)

        size, max_age_s = source_function_batching(self.tdd.job_config, self._bundle_size)
        ctx = SourceFunctionContext(
            output, size, chain.flush, serve, source.output, max_age_s=max_age_s
        )
        try:
            source.source_function.run(ctx)  # type: ignore[union-attr]
            ctx.close()
        except SourceCanceledError:
            raise TaskCanceledError from None
