"""The source operator at the head of a source task's chain.

Two kinds of payload: ``{"source": Source}`` (a reader the task polls a batch at a
time) and ``{"source_function": SourceFunction}`` (``run(ctx)`` on the task thread,
with a context that batches ``collect``\\ ed records). The task's mailbox loop drives
both; this module holds the parts that belong to the operator.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from taskmanager.operators.base import OperatorSetup, Output, StreamOperator
from taskmanager.operators.functions import close_function, open_function
from weir.core.source import SourceReader, create_reader


class SourceCanceledError(Exception):
    """Raised inside ``SourceFunction.run`` (from ``ctx.collect``) to unwind on cancel."""


class _ReaderContext:
    def __init__(self, index: int, parallelism: int) -> None:
        self._index = index
        self._parallelism = parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._index

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism


class SourceFunctionContext:
    """``SourceFunction.SourceContext``: ``collect`` appends to a batch that is pushed
    through the chain every ``batch_size`` records; ``between_batches`` serves the
    task's mailbox and checks for cancellation there."""

    def __init__(
        self, output: Output, batch_size: int, between_batches: Callable[[], None]
    ) -> None:
        self._output = output
        self._batch_size = batch_size
        self._between_batches = between_batches
        self._batch: list[Any] = []

    def collect(self, value: Any) -> None:
        batch = self._batch
        batch.append(value)
        if len(batch) >= self._batch_size:
            self.emit_pending()
            self._between_batches()

    def collect_with_timestamp(self, value: Any, timestamp: int) -> None:
        self.collect(value)

    def emit_pending(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            self._output(batch)

    def close(self) -> None:
        self.emit_pending()


class SourceOperator(StreamOperator):
    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.source = setup.payload.get("source")
        self.source_function = setup.payload.get("source_function")
        self.reader: SourceReader | None = None
        self.output: Output = self.process

    def open(self, output: Output) -> None:
        self.output = output
        if self.source_function is not None:
            open_function(self.source_function, self.setup.runtime_context)
        else:
            ctx = _ReaderContext(self.setup.subtask_index, self.setup.parallelism)
            restored = self.setup.restored_source_state
            # Our own checkpoint files, checksummed before they get here.
            position = None if restored is None else pickle.loads(restored)
            self.reader = create_reader(self.source, ctx, position)  # type: ignore[arg-type]

    def cancel_function(self) -> None:
        """Called from the cancelling thread, as Flink calls ``SourceFunction.cancel``."""
        fn = self.source_function
        if fn is not None and hasattr(fn, "cancel"):
            fn.cancel()

    def close(self) -> None:
        if self.reader is not None:
            reader, self.reader = self.reader, None
            reader.close()
        if self.source_function is not None:
            close_function(self.source_function)
