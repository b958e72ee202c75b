"""OperatorChain: the operators of one JobVertex, wired to call each other directly.

``OperatorDescriptor.chained_outputs`` forms a tree inside the vertex; an operator's
output is the ``process`` of each chained operator it feeds plus the ``emit`` of each
RecordWriter whose edge leaves from it. With several outputs the same list goes to
each (operators never mutate their input). Operators are opened from the tail of the
chain to its head, so each output exists before the operator that feeds it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from weir.core.job_graph import OperatorKind
from weir.taskmanager.operators.async_wait import AsyncWaitOperator
from weir.taskmanager.operators.base import (
    Collect,
    OperatorSetup,
    Output,
    StreamOperator,
    Timestamps,
    discard,
    ignore,
)
from weir.taskmanager.operators.broadcast import (
    CoBroadcastWithKeyedOperator,
    CoBroadcastWithNonKeyedOperator,
)
from weir.taskmanager.operators.functions import key_selector
from weir.taskmanager.operators.key_guard import guard_keys
from weir.taskmanager.operators.one_input import (
    FilterOperator,
    FlatMapOperator,
    KeyedProcessOperator,
    MapOperator,
    ProcessOperator,
    ReduceOperator,
)
from weir.taskmanager.operators.sinks import CollectOperator, PrintOperator, SinkOperator
from weir.taskmanager.operators.source import SourceOperator
from weir.taskmanager.operators.two_input import CoFlatMapOperator, CoMapOperator, CoProcessOperator
from weir.taskmanager.operators.watermarks import TimestampsAndWatermarksOperator
from weir.taskmanager.operators.window import WindowOperator
from weir.taskmanager.record_writer import RecordWriter

logger = logging.getLogger(__name__)

OPERATORS: dict[OperatorKind, type[StreamOperator]] = {
    OperatorKind.SOURCE: SourceOperator,
    OperatorKind.MAP: MapOperator,
    OperatorKind.FILTER: FilterOperator,
    OperatorKind.FLAT_MAP: FlatMapOperator,
    OperatorKind.PROCESS: ProcessOperator,
    OperatorKind.KEYED_PROCESS: KeyedProcessOperator,
    OperatorKind.REDUCE: ReduceOperator,
    OperatorKind.WINDOW: WindowOperator,
    OperatorKind.CO_MAP: CoMapOperator,
    OperatorKind.CO_FLAT_MAP: CoFlatMapOperator,
    OperatorKind.CO_PROCESS: CoProcessOperator,
    OperatorKind.BROADCAST_PROCESS: CoBroadcastWithNonKeyedOperator,
    OperatorKind.KEYED_BROADCAST_PROCESS: CoBroadcastWithKeyedOperator,
    OperatorKind.TIMESTAMPS_WATERMARKS: TimestampsAndWatermarksOperator,
    OperatorKind.SINK: SinkOperator,
    OperatorKind.PRINT: PrintOperator,
    OperatorKind.COLLECT: CollectOperator,
    OperatorKind.ASYNC_WAIT: AsyncWaitOperator,
}


def fan_out(outputs: Sequence[Collect]) -> Collect:
    if not outputs:
        return discard
    if len(outputs) == 1:
        return outputs[0]
    targets = tuple(outputs)

    def output(batch: list[Any], timestamps: Timestamps) -> None:
        for target in targets:
            target(batch, timestamps)

    return output


def _broadcast(calls: Sequence[Callable[[Any], None]]) -> Callable[[Any], None]:
    if len(calls) == 1:
        return calls[0]
    targets = tuple(calls)

    def call(value: Any) -> None:
        for target in targets:
            target(value)

    return call


def _entry(op: StreamOperator, index: int) -> Collect:
    """Where batches of the operator's input ``index`` go: its ``process`` (or
    ``process2``), for a keyed input behind ``guard_keys`` so that a key the state
    backend cannot hash names its key selector."""
    process = op.process if index == 0 else op.process2
    selectors = op.setup.payload.get("key_selectors") or ()
    if op.setup.keyed_state_backend is None or index >= len(selectors):
        return process
    selector = selectors[index]
    if selector is None:
        return process
    return guard_keys(process, key_selector(selector), op.name)


def _naming_rows(collect: Collect, names: list[str]) -> Collect:
    """``collect`` for an operator declared to emit Rows of a named type: a Row
    without field names gets the type's, as PyFlink's typed outputs do."""

    def collect_named(batch: list[Any], timestamps: Timestamps) -> None:
        for record in batch:
            # A Row (weir.common.types, which services do not import) without names.
            if not hasattr(record, "_fields"):
                set_names = getattr(record, "set_field_names", None)
                if set_names is not None:
                    set_names(names)
        collect(batch, timestamps)

    return collect_named


class OperatorChain:
    """The operators of a task in topological order (head first) and its writers."""

    def __init__(self, setups: Sequence[OperatorSetup], writers: Sequence[RecordWriter]) -> None:
        self.operators: list[StreamOperator] = [OPERATORS[s.descriptor.kind](s) for s in setups]
        self.writers = list(writers)
        self._opened: list[StreamOperator] = []
        # Only operators that override the hook are called at each checkpoint.
        self._snapshot_hooks = [
            op
            for op in self.operators
            if type(op).snapshot_state is not StreamOperator.snapshot_state
        ]

    @property
    def head(self) -> StreamOperator:
        return self.operators[0]

    def open(self) -> None:
        by_id = {op.setup.descriptor.operator_id: op for op in self.operators}
        for op in reversed(self.operators):
            descriptor = op.setup.descriptor
            main: list[Collect] = []
            watermarks: list[Callable[[int], None]] = []
            statuses: list[Callable[[bool], None]] = []
            for target_id in descriptor.chained_outputs:
                target = by_id[target_id]
                if target not in self._opened:
                    msg = f"chained output {target_id} of {descriptor.name!r} is not after it"
                    raise ValueError(msg)
                main.append(_entry(target, 0))
                watermarks.append(target.process_watermark)
                statuses.append(target.process_watermark_status)
            side: dict[str, list[Collect]] = {}
            for w in self.writers:
                if w.source_operator != descriptor.operator_id:
                    continue
                if w.output_tag:
                    side.setdefault(w.output_tag, []).append(w.emit)
                else:
                    main.append(w.emit)
                # Side outputs carry the operator's watermarks too, as in Flink.
                watermarks.append(w.emit_watermark)
                statuses.append(w.emit_watermark_status)
            self._opened.append(op)
            collect = fan_out(main)
            names = op.setup.payload.get("row_field_names")
            if names:
                collect = _naming_rows(collect, list(names))
            op.open(
                Output(
                    collect,
                    _broadcast(watermarks) if watermarks else ignore,
                    _broadcast(statuses) if statuses else ignore,
                    {tag: fan_out(collects) for tag, collects in side.items()},
                )
            )

    def input(self, index: int) -> Collect:
        """The entry of the head's input ``index`` (0, or 1 for a co-operator)."""
        return _entry(self.head, index)

    def input_watermark(self, index: int) -> Callable[[int], None]:
        """Where the combined watermark of the head's input ``index`` goes."""
        head = self.head
        return head.process_watermark if index == 0 else head.process_watermark2

    def input_watermark_status(self, index: int) -> Callable[[bool], None]:
        head = self.head
        return head.process_watermark_status if index == 0 else head.process_watermark_status2

    def flush_operators(self) -> None:
        """Push what operators hold into the writers, leaving partly filled buffers."""
        for op in self.operators:
            op.flush()

    def snapshot_state(self, checkpoint_id: int) -> None:
        """Tell the operators that want to know that checkpoint ``checkpoint_id`` is
        being taken (``StreamOperator.snapshot_state``)."""
        for op in self._snapshot_hooks:
            op.snapshot_state(checkpoint_id)

    def pending_buffers(self) -> list[dict[int, list[bytes]]]:
        """Per writer (in result partition order), its partly filled buffers."""
        return [writer.pending_buffers() for writer in self.writers]

    def flush(self) -> None:
        for op in self.operators:
            op.flush()
        for writer in self.writers:
            writer.flush()

    def finish(self) -> None:
        """End of input: finish operators head to tail, then flush and end the partitions."""
        self.finish_operators()
        self.end_partitions()

    def finish_operators(self) -> None:
        """End of input: finish operators head to tail (what they hold goes out), flush."""
        for op in self.operators:
            op.finish()
        self.flush()

    def emit_end_of_data(self) -> None:
        """Tell every consumer that no more records follow (EndOfData), while the
        partitions stay open for checkpoint barriers (FLIP-147)."""
        for writer in self.writers:
            writer.end_of_data()

    def end_partitions(self) -> None:
        """Flush and end every partition (END_OF_PARTITION): the task is done."""
        for writer in self.writers:
            writer.finish()

    def close(self) -> BaseException | None:
        """Close every opened operator (head first), even when one fails; returns the
        first failure."""
        first: BaseException | None = None
        for op in reversed(self._opened):
            try:
                op.close()
            except Exception as exc:  # closing must reach every operator
                if first is None:
                    first = exc
                else:
                    logger.warning("closing %s failed as well", op.name, exc_info=True)
        self._opened.clear()
        return first

    def release_writers(self, cause: BaseException | None) -> None:
        for writer in self.writers:
            writer.release(cause)

    def record_writer_stats(self) -> list[tuple[int, int]]:
        return [(w.buffers_written, w.records_written) for w in self.writers]
