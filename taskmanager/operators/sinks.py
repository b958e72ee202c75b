"""Sinks: user SinkFunctions, ``print()`` and the ``collect`` sink of execute_and_collect."""

from __future__ import annotations

import sys
from typing import IO, Any

from weir.core.checkpoint import CheckpointingConfig
from weir.core.job_graph import SerializerKind
from weir.core.serializers import serialize_batch, unpicklable_record_error
from weir.taskmanager.operators.base import OperatorSetup, Output, StreamOperator, Timestamps
from weir.taskmanager.operators.collected_floats import collected_floats
from weir.taskmanager.operators.contexts import SinkContext, TimerService
from weir.taskmanager.operators.function_state import has_state_hooks, snapshot_function_state
from weir.taskmanager.operators.functions import close_function, open_function
from weir.taskmanager.operators.print_format import build_renderer

# The first collect buffer is cut after this many records, before its size is known.
_INITIAL_COLLECT_RECORDS = 256
# The checkpoint id of the end-of-input commit when no final checkpoint follows: above
# any real checkpoint id (Flink's Long.MAX_VALUE).
END_OF_INPUT_CHECKPOINT_ID = (1 << 63) - 1


class SinkOperator(StreamOperator):
    """Calls ``invoke(value, context)`` of a SinkFunction, or a plain ``callable(value)``."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.function = setup.payload["function"]
        self._final_checkpoint = CheckpointingConfig.from_config(
            setup.config or {}
        ).final_checkpoints

    def open(self, output: Output) -> None:
        super().open(output)
        # A connector sink may check the job's settings it depends on (the Kafka sink's
        # transaction timeout against the checkpoint interval) before it opens.
        check = getattr(self.function, "check_job_configuration", None)
        if callable(check):
            check(self.setup.config or {})
        open_function(self.function, self.setup.runtime_context)
        invoke_batch = getattr(self.function, "invoke_batch", None)
        invoke = getattr(self.function, "invoke", None)
        if invoke_batch is not None and callable(invoke_batch):
            # Weir's own hook: one call per batch, the batch as it comes (a list, or a
            # ColumnBatch whose ``columns`` a columnar sink reads without records).
            self.columnar = True
            batch_ctx = SinkContext(TimerService(self.setup.clock_ms, owner=self))

            def process(batch: list[Any], timestamps: Timestamps) -> None:
                batch_ctx.batch_timestamps = timestamps
                invoke_batch(batch, batch_ctx)

        elif invoke is not None and callable(invoke):
            ctx = SinkContext(TimerService(self.setup.clock_ms, owner=self))

            def process(batch: list[Any], timestamps: Timestamps) -> None:
                if timestamps is None:
                    for x in batch:
                        invoke(x, ctx)
                    return
                for x, t in zip(batch, timestamps, strict=True):
                    ctx.current_timestamp = t
                    invoke(x, ctx)
                ctx.current_timestamp = None

        else:
            call = self.function

            def process(batch: list[Any], timestamps: Timestamps) -> None:
                for x in batch:
                    call(x)

        self.process = process

    def finish(self) -> None:
        """End of bounded input: a sink with a ``finish()`` hook (FileSink, two-phase-commit
        sinks) closes what it holds. Its commit comes with the task's final checkpoint;
        when none will be taken (checkpointing off, or checkpoints-after-tasks-finish off),
        a two-phase-commit sink (state hooks and ``notify_checkpoint_complete``)
        pre-commits and commits now, under END_OF_INPUT_CHECKPOINT_ID, as Flink's
        committers commit with Long.MAX_VALUE at the end of a job without checkpoints."""
        function = self.function
        finish = getattr(function, "finish", None)
        if callable(finish):
            finish()
        if self._final_checkpoint:
            return
        commit = getattr(function, "notify_checkpoint_complete", None)
        if has_state_hooks(function) and callable(commit):
            snapshot_function_state(
                function,
                self.setup.operator_state_backend,
                END_OF_INPUT_CHECKPOINT_ID,
                self.setup.clock_ms(),
            )
            commit(END_OF_INPUT_CHECKPOINT_ID)

    def close(self) -> None:
        close_function(self.function)


def print_prefix(sink_identifier: str | None, subtask_index: int, parallelism: int) -> str:
    """Flink's PrintSinkOutputWriter prefix: ``"id:3> "``, ``"3> "``, ``"id> "`` or ``""``."""
    prefix = sink_identifier or ""
    if parallelism > 1:
        if prefix:
            prefix += ":"
        prefix += str(subtask_index + 1)
    if prefix:
        prefix += "> "
    return prefix


def render(value: Any) -> str:
    """The text PyFlink prints for a record of an untyped (pickled) stream.

    PyFlink maps such a stream through ``str(value)`` (strings pass as they are) before
    Java prints it, so Python's own rendering is what appears: ``(1, 'a')``, ``None``,
    ``0.5``, ``True``. Bytes are decoded as UTF-8, as the Java string they become.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class PrintOperator(StreamOperator):
    """``DataStream.print(sink_identifier)``: one line per record on stdout (or the
    TaskManager's print target)."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.prefix = print_prefix(
            setup.payload.get("sink_identifier"), setup.subtask_index, setup.parallelism
        )
        self._file: IO[str] | None = None
        self._owns_file = False

    def open(self, output: Output) -> None:
        target = self.setup.print_target
        if target is None:
            self._file = sys.stdout
        else:
            self._file = open(target, "a", buffering=1, encoding="utf-8")
            self._owns_file = True
        write = self._file.write
        prefix = self.prefix
        render = build_renderer(self.setup.payload.get("format"))

        def process(batch: list[Any], timestamps: Timestamps) -> None:
            write("".join([f"{prefix}{render(x)}\n" for x in batch]))

        self.process = process

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def finish(self) -> None:
        self.flush()

    def close(self) -> None:
        if self._file is not None and self._owns_file:
            self._file.close()
        self._file = None


class CollectOperator(StreamOperator):
    """Ships records to the client through ``TaskServices.collect`` in serialized
    batches of about one segment, flushed at the buffer timeout, then end=True.

    Each batch carries its epoch: the id of the last checkpoint this subtask took (or
    restored), 0 before any. The JobMaster shows a batch to the client once a later
    checkpoint completed, so records replayed after a failover are not seen twice.
    Pending records are flushed before a checkpoint, so a batch never mixes epochs."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self._pending: list[Any] = []
        self._limit = _INITIAL_COLLECT_RECORDS
        self._operator_id = str(setup.descriptor.operator_id)
        self._epoch = setup.restored_checkpoint_id
        self._serializer = setup.payload.get("serializer", SerializerKind.MARSHAL)

    def open(self, output: Output) -> None:
        pending = self._pending
        as_collected = collected_floats(self.setup.payload.get("float_collect"))

        def process(batch: list[Any], timestamps: Timestamps) -> None:
            pending.extend(batch if as_collected is None else as_collected(batch))
            if len(pending) >= self._limit:
                self.flush()

        self.process = process

    def _send(self, records: list[Any], end: bool) -> None:
        try:
            buffer = serialize_batch(records, self._serializer)
        except Exception as exc:
            error = unpicklable_record_error(
                records, "the stream collected by execute_and_collect()", "the client"
            )
            if error is None:
                raise
            raise error from exc
        if records:
            size = self.setup.segment_size
            self._limit = max(1, len(records) * size // len(buffer))
        self.setup.collect(self._operator_id, self.setup.subtask_index, buffer, end, self._epoch)

    def snapshot_state(self, checkpoint_id: int) -> None:
        # The chain flushed this operator just before: what it sends from now on
        # follows the barrier of ``checkpoint_id``.
        self._epoch = checkpoint_id

    def flush(self) -> None:
        if self._pending:
            records = self._pending[:]
            self._pending.clear()
            self._send(records, False)

    def finish(self) -> None:
        self.flush()
        self._send([], True)
