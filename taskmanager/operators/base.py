"""The operator contract inside a chain: batches in, batches out, on the task thread.

A batch is a list of records plus, in parallel, the list of their timestamps (event
time in ms, ``None`` for a record without one), or ``None`` instead of that list when
no record of the batch has a timestamp: streams without event time never build or
look at a timestamp list beyond one ``is None`` check per batch. A batch of columns
(``weir.core.columnar.ColumnBatch``) may carry its timestamps as one int64 numpy array
instead (none missing), made and read as a column; wherever such a batch becomes
records, its timestamps become a list too (``timestamp_list``), so an operator that
reads records one by one only ever sees lists of ints.

An operator is opened with its ``Output`` and then exposes ``process(batch,
timestamps)`` (input 0) and, for two-input operators, ``process2`` (input 1). Operators
never mutate the lists they are given (a fan-out hands the same lists to several
outputs) and never emit an empty batch. Watermarks arrive through
``process_watermark`` (``process_watermark2`` for input 1): an operator first fires
what the watermark releases (timers, windows), emits that, and only then forwards the
watermark, so nothing it emits is late downstream. Every method is called on the task
thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.core.job_graph import OperatorDescriptor
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend

TimestampArray = Any
"""A batch of columns' timestamps as one int64 numpy array (numpy is imported only where
columns are)."""
Timestamps = list[int | None] | TimestampArray | None
Collect = Callable[[list[Any], Timestamps], None]
"""``collect(records, timestamps)``: hands a batch on."""

# Flink's watermarks before any arrived and at the end of input (Long.MIN/MAX_VALUE).
MIN_WATERMARK = -(1 << 63)
MAX_WATERMARK = (1 << 63) - 1


def timestamp_list(timestamps: Timestamps) -> list[int | None] | None:
    """``timestamps`` as a list, for records read one by one (an array made one)."""
    if timestamps is None or isinstance(timestamps, list):
        return timestamps
    return timestamps.tolist()  # type: ignore[no-any-return]


def discard(batch: list[Any], timestamps: Timestamps = None) -> None:
    """The output of an operator nothing consumes."""


def ignore(_value: Any) -> None:
    """A watermark or idleness path nothing listens to."""


class Output:
    """Where an operator's results go: its main output, the side outputs by tag id, and
    the watermark (and idleness) path.

    Operators bind ``collect`` into a local at ``open``; a batch costs one call.
    """

    __slots__ = ("_side", "collect", "emit_watermark", "emit_watermark_status")

    def __init__(
        self,
        collect: Collect = discard,
        emit_watermark: Callable[[int], None] = ignore,
        emit_watermark_status: Callable[[bool], None] = ignore,
        side_outputs: Mapping[str, Collect] | None = None,
    ) -> None:
        self.collect = collect
        self.emit_watermark = emit_watermark
        self.emit_watermark_status = emit_watermark_status
        """``emit_watermark_status(idle)``: this output stops (True) or resumes (False)
        holding back the watermark of the tasks downstream."""
        self._side = dict(side_outputs or {})

    def side_output(self, tag_id: str) -> Collect:
        """The collect of side output ``tag_id``; records of a tag nobody reads are dropped,
        as in Flink."""
        return self._side.get(tag_id, discard)

    @property
    def side_output_ids(self) -> frozenset[str]:
        return frozenset(self._side)

    def routing_tagged_results(self) -> Collect:
        """``collect`` for the results of a process function: when this operator has
        side outputs, a result ``(output_tag, value)`` goes to that side output, as
        PyFlink's ``yield output_tag, value`` does; without side outputs results are
        passed on as they are (PyFlink checks only then, too)."""
        if not self._side:
            return self.collect
        collect = self.collect
        side = self.side_output

        def route(batch: list[Any], timestamps: Timestamps) -> None:
            main: list[Any] = []
            main_ts: list[int | None] = []
            for i, y in enumerate(batch):
                if type(y) is tuple and y and isinstance(getattr(y[0], "tag_id", None), str):
                    side(y[0].tag_id)([y[1]], None if timestamps is None else [timestamps[i]])
                else:
                    main.append(y)
                    if timestamps is not None:
                        main_ts.append(timestamps[i])
            if main:
                collect(main, None if timestamps is None else main_ts)

        return route


DISCARDING_OUTPUT = Output()


@dataclass(frozen=True, slots=True)
class RestoredSourceState:
    """A source reader's state in the checkpoint the task restores, as pickled bytes
    (our own checkpoint files, checksummed before they get here): the opaque position of
    a ``CheckpointedSourceReader``, or the split lists of ``SplitCheckpointedSourceReader``
    s. ``rescaled``: ``split_lists`` are every old subtask's, of which this subtask takes
    its round-robin share (``weir.core.source.assign_splits``); otherwise the one list
    this subtask wrote."""

    position: bytes | None = None
    split_lists: tuple[bytes, ...] = ()
    rescaled: bool = False


@dataclass(frozen=True, slots=True)
class OperatorSetup:
    """What an operator needs from its task to be built and opened."""

    descriptor: OperatorDescriptor
    payload: Mapping[str, Any]
    runtime_context: StreamingRuntimeContext
    keyed_state_backend: KeyedStateBackend | None
    subtask_index: int
    parallelism: int
    segment_size: int
    collect: Callable[[str, int, bytes, bool, int], None]
    """``(operator_id, subtask_index, serialized batch, end_of_data, checkpoint epoch)``."""
    print_target: str | None
    clock_ms: Callable[[], int]
    """Processing time in ms since the epoch (timer services)."""
    processing_timers: Any = None
    """The task's ``ProcessingTimeService``: runs a callback on the task thread at a
    processing time (timers, periodic watermarks)."""
    batch_mode: bool = False
    """The job runs in BATCH execution mode (``execution.runtime-mode``)."""
    restored_source_state: RestoredSourceState | None = None
    """A source reader's position or splits from the checkpoint the task restores."""
    config: Mapping[str, str] | None = None
    """The job's configuration (Flink key names)."""
    restored_checkpoint_id: int = 0
    """The id of the checkpoint the task restores, 0 for a fresh start."""
    operator_state_backend: DefaultOperatorStateBackend = field(
        default_factory=DefaultOperatorStateBackend
    )
    """The operator's non-keyed state (list, union list and broadcast state, and the
    bytes of raw-form function state), restored before the operator is opened."""
    post_mail: Callable[[Callable[[], None]], None] | None = None
    """Hands an action, from any thread, to the task thread, which runs it between two
    batches (the task's mailbox); None where an operator runs without a task."""
    canceled: Callable[[], bool] = lambda: False
    """Whether the task is being cancelled: an operator that waits on the task thread for
    something other than input (an async operator whose queue is full) stops waiting."""


class StreamOperator:
    """Base class: no-op lifecycle; subclasses set ``process`` (and ``process2``) in open.

    The default watermark handling forwards the watermark: right for operators that
    hold no timers. Two-input operators combine their inputs' watermarks first (the
    minimum, as Flink's ``AbstractStreamOperator`` does).
    """

    def __init__(self, setup: OperatorSetup) -> None:
        self.setup = setup
        self.name = setup.descriptor.name
        self.process: Collect = discard
        self.process2: Collect = discard
        self.output: Output = DISCARDING_OUTPUT
        self.current_watermark = MIN_WATERMARK
        self._input_watermarks = [MIN_WATERMARK, MIN_WATERMARK]
        self._input_idle = [False, False]

    def open(self, output: Output) -> None:
        """Open user functions and bind the per-batch path to ``output``."""
        self.output = output

    def process_watermark(self, watermark: int) -> None:
        """Input 0 (or the only input) reached ``watermark``."""
        if self.setup.descriptor.input_count == 2:
            self._combine(0, watermark)
        else:
            self.advance_watermark(watermark)

    def process_watermark2(self, watermark: int) -> None:
        self._combine(1, watermark)

    def _combine(self, index: int, watermark: int) -> None:
        self._input_watermarks[index] = watermark
        self._advance_combined()

    def _advance_combined(self) -> None:
        active = [
            w for w, idle in zip(self._input_watermarks, self._input_idle, strict=True) if not idle
        ]
        if active:
            combined = min(active)
            if combined > self.current_watermark:
                self.advance_watermark(combined)

    def advance_watermark(self, watermark: int) -> None:
        """Event time moved to ``watermark``: fire what it releases, then forward it."""
        self.current_watermark = watermark
        self.output.emit_watermark(watermark)

    def process_watermark_status(self, idle: bool) -> None:
        """Input 0 went idle (True) or became active again (False)."""
        if self.setup.descriptor.input_count == 2:
            self._combine_status(0, idle)
        else:
            self.output.emit_watermark_status(idle)

    def process_watermark_status2(self, idle: bool) -> None:
        self._combine_status(1, idle)

    def _combine_status(self, index: int, idle: bool) -> None:
        was_idle = all(self._input_idle)
        self._input_idle[index] = idle
        now_idle = all(self._input_idle)
        if not idle:
            self._advance_combined()
        if now_idle != was_idle:
            self.output.emit_watermark_status(now_idle)
        elif idle:
            # The other input alone decides now; it may be ahead.
            self._advance_combined()

    def flush(self) -> None:
        """Buffer timeout: push out anything held back (collect sinks)."""

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """The task takes checkpoint ``checkpoint_id``: called first in its synchronous
        part, head of the chain first, before ``flush``; what an operator emits here
        goes out before the barrier (Flink's ``prepareSnapshotPreBarrier``). By default
        nothing."""

    def snapshot_state(self, checkpoint_id: int) -> None:
        """The task takes checkpoint ``checkpoint_id``: called in its synchronous part,
        after ``flush`` and before the state is captured and the barrier is sent on.
        Nothing processed before it can be emitted after it. Not called for checkpoints
        that fail before this point. Must be quick (the task is paused); by default
        nothing."""

    def end_key(self) -> None:
        """BATCH execution, sorted input: the current key's last record went by (the
        backend's current key is still that key); by default nothing."""

    def finish(self) -> None:
        """End of input: emit what is still held; called in topological order."""

    def close(self) -> None:
        """Close user functions; called once, also after a failure."""
