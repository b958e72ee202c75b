"""OperatorChain: the operators of one JobVertex, wired to call each other directly.

``OperatorDescriptor.chained_outputs`` forms a tree inside the vertex; an operator's
output is the ``process`` of each chained operator it feeds plus the ``emit`` of each
RecordWriter whose edge leaves from it. With several outputs the same list goes to
each (operators never mutate their input). Operators are opened from the tail of the
chain to its head, so each output exists before the operator that feeds it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from weir.core import config
from weir.core.columnar import as_records
from weir.core.ids import OperatorId
from weir.core.job_graph import OperatorKind
from weir.core.sort_keys import sort_key_function
from weir.core.type_coders import DeclaredTypeCoder
from weir.taskmanager.operators.async_wait import AsyncWaitOperator
from weir.taskmanager.operators.base import (
    Collect,
    OperatorSetup,
    Output,
    StreamOperator,
    Timestamps,
    discard,
    ignore,
    timestamp_list,
)
from weir.taskmanager.operators.batch_functions import (
    KeyedMapBatchesOperator,
    MapBatchesOperator,
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
from weir.taskmanager.operators.operator_io import (
    OperatorIOCounters,
    counting_in,
    counting_out,
    recording_watermark,
)
from weir.taskmanager.operators.sinks import CollectOperator, PrintOperator, SinkOperator
from weir.taskmanager.operators.sorting_data_input import SortingDataInput
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
    OperatorKind.MAP_BATCHES: MapBatchesOperator,
    OperatorKind.KEYED_MAP_BATCHES: KeyedMapBatchesOperator,
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
    backend cannot hash names its key selector, and for an operator that reads records
    one by one behind ``_records_of`` (a batch may come as columns)."""
    process = op.process if index == 0 else op.process2
    if not getattr(op, "columnar", False):
        process = _records_of(process)
    selectors = op.setup.payload.get("key_selectors") or ()
    if op.setup.keyed_state_backend is None or index >= len(selectors):
        return process
    selector = selectors[index]
    if selector is None:
        return process
    return guard_keys(process, key_selector(selector), op.name)


def _coded(collect: Collect, coder: DeclaredTypeCoder | None, operator: str) -> Collect:
    """``collect`` of records first made what PyFlink's coder of the output's declared type
    makes of them (and checked), where PyFlink serialises that output
    (``weir.graph.coded_outputs``); ``collect`` itself elsewhere. A ColumnBatch passes as
    it is: it was made by a spec built from the same type."""
    if coder is None or collect is discard:
        return collect
    code = coder.code_batch

    def coded(batch: list[Any], timestamps: Timestamps) -> None:
        collect(code(batch, operator) if type(batch) is list else batch, timestamps)

    return coded


def _records_of(process: Collect) -> Collect:
    """``process`` fed lists of records: a ``ColumnBatch`` (a batch function's result, a
    columnar source's batch) becomes its records here, once per batch."""

    def process_records(batch: list[Any], timestamps: Timestamps) -> None:
        if type(batch) is list:
            process(batch, timestamps)
        else:
            process(as_records(batch), timestamp_list(timestamps))

    return process_records


def _sorting_input(head: StreamOperator, key_type: str) -> SortingDataInput | None:
    """A BATCH job's keyed one-input head reads its input sorted by key, then timestamp,
    as in Flink (``SortingDataInput``); None for every other head."""
    setup = head.setup
    if not setup.batch_mode or setup.descriptor.input_count != 1:
        return None
    selectors = setup.payload.get("key_selectors") or ()
    if setup.keyed_state_backend is None or not selectors or selectors[0] is None:
        return None
    job_config = setup.config or {}
    return SortingDataInput(
        key_selector(selectors[0]),
        sort_key_function(key_type),
        memory_bytes=config.get(job_config, config.SORTED_INPUTS_MEMORY),
        batch_size=config.get(job_config, config.PYTHON_BUNDLE_SIZE),
        # The task thread's current directory: the job's working directory.
        spill_root=os.getcwd(),
    )


class OperatorChain:
    """The operators of a task in topological order (head first) and its writers.

    In a BATCH job whose head is keyed, the head's input goes through a
    ``SortingDataInput`` first: it is buffered until the input ends, and
    ``finish_operators`` replays it sorted before the operators finish; the input's
    watermark waits until then too. ``input_key_type`` is the declared type of the
    input's keys (``"pickled"``: none), which decides their order.
    """

    def __init__(
        self,
        setups: Sequence[OperatorSetup],
        writers: Sequence[RecordWriter],
        input_key_type: str = "pickled",
    ) -> None:
        self.operators: list[StreamOperator] = [OPERATORS[s.descriptor.kind](s) for s in setups]
        self.writers = list(writers)
        self._opened: list[StreamOperator] = []
        self._input_key_type = input_key_type
        self._sorted_input: SortingDataInput | None = None
        self._held_watermark: int | None = None
        # Each operator's counts (weir.taskmanager.operators.operator_io), by operator id,
        # made head first so that every chained operator finds the one before it.
        upstream: dict[OperatorId, OperatorIOCounters] = {}
        self.io: dict[OperatorId, OperatorIOCounters] = {}
        for op in self.operators:
            descriptor = op.setup.descriptor
            counters = OperatorIOCounters(upstream.get(descriptor.operator_id))
            self.io[descriptor.operator_id] = counters
            for target_id in descriptor.chained_outputs:
                upstream[target_id] = counters
        self._inputs: list[Collect] = []
        # The operators whose main output goes to at least one consumer that reads a
        # batch of columns as columns (``output_takes_columns``).
        self._columnar_outputs: set[OperatorId] = set()
        # Only operators that override the hooks are called at each checkpoint.
        self._snapshot_hooks = [
            op
            for op in self.operators
            if type(op).snapshot_state is not StreamOperator.snapshot_state
        ]
        self._pre_barrier_hooks = [
            op
            for op in self.operators
            if type(op).prepare_snapshot_pre_barrier
            is not StreamOperator.prepare_snapshot_pre_barrier
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
            columns = False
            for target_id in descriptor.chained_outputs:
                target = by_id[target_id]
                if target not in self._opened:
                    msg = f"chained output {target_id} of {descriptor.name!r} is not after it"
                    raise ValueError(msg)
                columns = columns or bool(getattr(target, "columnar", False))
                main.append(_entry(target, 0))
                watermarks.append(target.process_watermark)
                statuses.append(target.process_watermark_status)
            side: dict[str, list[Collect]] = {}
            payload = op.setup.payload
            coder = payload.get("output_coder")
            if payload.get("output_coded_after_routing"):
                # Fused with key_by's (or partition_custom's) function: the key is taken
                # from the record as made, then the record is coded (weir.graph.coded_outputs).
                for w in self.writers:
                    if w.source_operator == descriptor.operator_id and not w.output_tag:
                        w.code_after_routing(coder, op.name)
                coder = None
            for w in self.writers:
                if w.source_operator != descriptor.operator_id:
                    continue
                if w.output_tag:
                    side.setdefault(w.output_tag, []).append(w.emit)
                else:
                    columns = columns or w.takes_columns
                    main.append(w.emit)
                # Side outputs carry the operator's watermarks too, as in Flink.
                watermarks.append(w.emit_watermark)
                statuses.append(w.emit_watermark_status)
            self._opened.append(op)
            if columns:
                self._columnar_outputs.add(descriptor.operator_id)
                # An operator that hands a batch on unchanged (``passes_columns``) reads
                # columns when what it feeds does, so columns cross it: opened last to
                # first, the chain decides this before wiring what feeds it.
                if getattr(op, "passes_columns", False):
                    op.columnar = True  # type: ignore[attr-defined]
            counters = self.io[descriptor.operator_id]
            # Coded where PyFlink serialises them (weir.graph.coded_outputs).
            collect = _coded(fan_out(main), coder, op.name)
            side_coders = payload.get("side_output_coders") or {}
            op.open(
                Output(
                    counting_out(collect, counters, side=False),
                    recording_watermark(_broadcast(watermarks) if watermarks else ignore, counters),
                    _broadcast(statuses) if statuses else ignore,
                    {
                        tag: counting_out(
                            _coded(fan_out(collects), side_coders.get(tag), op.name),
                            counters,
                            side=True,
                        )
                        for tag, collects in side.items()
                    },
                )
            )
        self._sorted_input = _sorting_input(self.head, self._input_key_type)
        head = self.head
        counters = self.io[head.setup.descriptor.operator_id]
        first = (
            _records_of(self._sorted_input.add)
            if self._sorted_input is not None
            else _entry(head, 0)
        )
        self._inputs = [counting_in(first, counters), counting_in(_entry(head, 1), counters)]

    def input(self, index: int) -> Collect:
        """The entry of the head's input ``index`` (0, or 1 for a co-operator), counting
        what enters the chain; once the chain is open. A sorted input (BATCH) buffers
        what enters and replays it when the input ends."""
        return self._inputs[index]

    def takes_columns(self, index: int) -> bool:
        """Whether the head reads a batch of columns on input ``index`` as columns (else it
        is made records at its entry)."""
        head = self.head
        return index == 0 and self._sorted_input is None and bool(getattr(head, "columnar", False))

    def output_takes_columns(self, op: StreamOperator) -> bool:
        """Whether something ``op``'s main output feeds reads a batch of columns as
        columns (a columnar operator, a forward or key-group edge that carries columns);
        once the chain is open. A source then hands over columns where its reader can
        (``weir.core.source.ColumnarSourceReader``): a consumer that reads columns gets
        them without records being built, and one that reads records gets the batch's
        records, built once, alike for every consumer. Where none reads columns the
        reader's records go on as they are, so the per-record path is untouched."""
        return op.setup.descriptor.operator_id in self._columnar_outputs

    def _hold_watermark(self, watermark: int) -> None:
        self._held_watermark = watermark

    def input_watermark(self, index: int) -> Callable[[int], None]:
        """Where the combined watermark of the head's input ``index`` goes."""
        if index == 0 and self._sorted_input is not None:
            return self._hold_watermark
        head = self.head
        return head.process_watermark if index == 0 else head.process_watermark2

    def input_watermark_status(self, index: int) -> Callable[[bool], None]:
        head = self.head
        return head.process_watermark_status if index == 0 else head.process_watermark_status2

    def flush_operators(self) -> None:
        """Push what operators hold into the writers, leaving partly filled buffers."""
        for op in self.operators:
            op.flush()

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """Let the operators that want to emit before the barrier of checkpoint
        ``checkpoint_id`` do so, head first (``StreamOperator.prepare_snapshot_pre_barrier``)."""
        for op in self._pre_barrier_hooks:
            op.prepare_snapshot_pre_barrier(checkpoint_id)

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
        """End of input: replay a sorted input, then finish operators head to tail (what
        they hold goes out), flush."""
        sorted_input, self._sorted_input = self._sorted_input, None
        if sorted_input is not None:
            head = self.head
            sorted_input.drain(_entry(head, 0), head.end_key)
            if self._held_watermark is not None:
                head.process_watermark(self._held_watermark)
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
        if self._sorted_input is not None:
            self._sorted_input.close()
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
