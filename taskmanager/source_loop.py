"""The loop of a source Task (Flink's SourceStreamTask): a reader polled a batch at a
time, or a legacy ``SourceFunction`` run on the task thread with a context that batches
what it collects; between two batches the task serves its mailbox (checkpoint
triggers, timers, a due flush) and sees a cancel.

Everything here runs on the task thread. The task hands it, in its constructor, the
source operator and its chain, how to pace batches, and its own steps between two
batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from weir.core.source import ColumnarSourceReader
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
    """See the module docstring; ``run`` is the task's loop."""

    def __init__(
        self,
        source: SourceOperator,
        chain: OperatorChain,
        *,
        mailbox: Mailbox,
        flusher: OutputFlusher,
        buffer_timeout: BufferTimeout,
        bundle_size: int,
        back_pressure_from: Sequence[ResultPartitionWriter],
        job_config: Mapping[str, str],
        serve_mailbox: Callable[[], None],
        serve_actions: Callable[[], None],
        canceled: Callable[[], bool],
    ) -> None:
        """``source``: the head of ``chain``. ``mailbox``: the task's, waited on while the
        source has nothing to read. ``bundle_size``: the most records polled at once.
        ``back_pressure_from``: the partitions a reader waits for room in before it reads
        (unaligned checkpoints; empty otherwise). ``job_config``: where a legacy
        ``SourceFunction``'s batching is set. ``serve_mailbox``: the task's step between
        two batches (its actions, a cancel, a due flush); ``serve_actions``: the same
        without the flush; ``canceled``: the task was cancelled."""
        self._source = source
        self._chain = chain
        self._mailbox = mailbox
        self._flusher = flusher
        self._buffer_timeout = buffer_timeout
        self._bundle_size = bundle_size
        self._back_pressure_from = tuple(back_pressure_from)
        self._job_config = job_config
        self._serve_mailbox = serve_mailbox
        self._serve_actions = serve_actions
        self._canceled = canceled
        # What the task thread counts for its metrics, per wait; read by other threads
        # without a lock.
        self.idle_ns = 0
        """Time the source waited for data."""
        self.back_pressured_ns = 0
        """Time the source waited for room in its outputs (unaligned checkpoints)."""

    def run(self) -> None:
        """Read the source to its end (task thread)."""
        source = self._source
        if source.source_function is not None:
            self._run_source_function(source)
            return
        reader = source.reader
        assert reader is not None
        chain = self._chain
        timeout = self._buffer_timeout
        flush_after_batch = timeout.flush_after_batch
        serve = self._serve_mailbox
        # Columns when what follows reads them and the reader can give them
        # (OperatorChain.output_takes_columns); the reader's records otherwise.
        poll_batch: Callable[[int], Sequence[Any] | None] = (
            reader.poll_columns
            if isinstance(reader, ColumnarSourceReader) and chain.output_takes_columns(source)
            else reader.poll_batch
        )
        output = source.emit
        n = self._bundle_size
        flusher = self._flusher
        mailbox = self._mailbox
        # Unaligned checkpoints must not wait for a back-pressured source to get its
        # batch out: it reads only when its output has room, and serves the mailbox (a
        # checkpoint trigger) meanwhile, as Flink's StreamTask does. Aligned barriers
        # queue behind the data anyway, so that mode keeps the plain loop.
        # Nor does it flush a partly filled buffer then, which would block as well.
        partitions = self._back_pressure_from
        while True:
            if partitions and not all(p.is_available() for p in partitions):
                self._serve_actions()
                started = time.perf_counter_ns()
                mailbox.wait(_IDLE_SOURCE_WAIT_S)
                self.back_pressured_ns += time.perf_counter_ns() - started
                continue
            serve()
            batch = poll_batch(n)
            if batch is None:
                return
            if batch:
                with flusher:  # inside a batch (OutputFlusher's contract)
                    output(batch, None)  # type: ignore[arg-type]  # a list or a ColumnBatch
                if flush_after_batch:
                    chain.flush()
            else:
                wait = timeout.poll_timeout()
                started = time.perf_counter_ns()
                mailbox.wait(
                    _IDLE_SOURCE_WAIT_S if wait is None else min(wait, _IDLE_SOURCE_WAIT_S)
                )
                self.idle_ns += time.perf_counter_ns() - started

    def _run_source_function(self, source: SourceOperator) -> None:
        chain = self._chain
        flush_after_batch = self._buffer_timeout.flush_after_batch
        canceled = self._canceled
        serve_mailbox = self._serve_mailbox

        def serve() -> None:
            if canceled():
                raise SourceCanceledError
            if flush_after_batch:
                chain.flush()
            serve_mailbox()

        emit = source.emit
        flusher = self._flusher

        def output(batch: list[Any], timestamps: list[int | None] | None) -> None:
            with flusher:  # inside a batch (OutputFlusher's contract)
                emit(batch, timestamps)

        size, max_age_s = source_function_batching(self._job_config, self._bundle_size)
        ctx = SourceFunctionContext(
            output, size, chain.flush, serve, source.output, max_age_s=max_age_s
        )
        try:
            source.source_function.run(ctx)  # type: ignore[union-attr]
            ctx.close()
        except SourceCanceledError:
            raise TaskCanceledError from None
