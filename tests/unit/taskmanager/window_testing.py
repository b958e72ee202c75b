"""Builders for window operator tests: a real WindowedStream payload, a real HashMap
backend and timer service, and an Output that records what the operator emits."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable
from typing import Any

import cloudpickle

from weir.core.columnar import as_records
from weir.core.ids import OperatorId
from weir.core.job_graph import OperatorDescriptor, OperatorKind
from weir.datastream import StreamExecutionEnvironment
from weir.taskmanager.operators.base import OperatorSetup, Output, timestamp_list
from weir.taskmanager.operators.window import WindowOperator
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend


class RecordingOutput:
    """Collects main-output records with their timestamps, side outputs and watermarks."""

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.batches: list[tuple[Any, Any]] = []
        """What the operator emitted, batch by batch, as it emitted it."""
        self.timestamps: list[int | None] = []
        self.side: dict[str, list[tuple[Any, int | None]]] = {}
        self.watermarks: list[int] = []
        self.log: list[tuple[str, Any]] = []

    def collect(self, records: list[Any], timestamps: Any) -> None:
        assert len(records), "operators never emit an empty batch"
        self.batches.append((records, timestamps))
        # As the chain hands them to an operator that reads records one by one.
        records, timestamps = as_records(records), timestamp_list(timestamps)
        self.records += records
        self.timestamps += timestamps
        self.log += [("record", r) for r in records]

    def emit_watermark(self, watermark: int) -> None:
        self.watermarks.append(watermark)
        self.log.append(("watermark", watermark))

    def output(self, tags: tuple[str, ...] = ()) -> Output:
        def side(tag: str) -> Callable[[list[Any], Any], None]:
            def collect(records: list[Any], timestamps: Any) -> None:
                self.side.setdefault(tag, []).extend(zip(records, timestamps, strict=True))

            return collect

        return Output(
            collect=self.collect,
            emit_watermark=self.emit_watermark,
            side_outputs={t: side(t) for t in tags},
        )

    def take(self) -> list[Any]:
        records = self.records
        self.records, self.timestamps = [], []
        return records


class FakeClock:
    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def signed(value: Any) -> Any:
    """A result with a float's sign beside it: 0.0 and -0.0 are equal, but print apart."""
    return (value, math.copysign(1.0, value)) if isinstance(value, float) else (value, 0.0)


def window_payload(build: Callable[[Any], Any]) -> dict[str, Any]:
    """The payload of the window operator ``build(keyed_or_plain_stream)`` records; the
    stream holds ``(key, value)`` pairs keyed by the first field."""
    env = StreamExecutionEnvironment()
    ds = env.from_collection([("a", 1)])
    result = build(ds)
    payload = result._transformation.payload
    assert result._transformation.kind is OperatorKind.WINDOW
    return cloudpickle.loads(cloudpickle.dumps(payload))  # type: ignore[no-any-return]


def new_backend() -> HashMapKeyedStateBackend:
    return HashMapKeyedStateBackend(128, range(128))


class Harness:
    """A WindowOperator on a real backend and timer service, with a fake clock."""

    def __init__(
        self,
        payload: dict[str, Any],
        *,
        backend: HashMapKeyedStateBackend | None = None,
        clock: FakeClock | None = None,
        tags: tuple[str, ...] = (),
        processing_timers: Any = None,
    ) -> None:
        """``processing_timers``: the task's ProcessingTimeService (None: timers fire only
        through ``fire_processing_timers``)."""
        self.backend = backend or new_backend()
        self.clock = clock or FakeClock()
        self.out = RecordingOutput()
        ctx = StreamingRuntimeContext(
            task_name="window",
            task_name_with_subtasks="window (1/1)",
            number_of_parallel_subtasks=1,
            max_number_of_parallel_subtasks=128,
            index_of_this_subtask=0,
            attempt_number=0,
            job_parameters={},
            keyed_state_backend=self.backend,
        )
        setup = OperatorSetup(
            descriptor=OperatorDescriptor(OperatorId("0" * 32), "window", OperatorKind.WINDOW, b""),
            payload=payload,
            runtime_context=ctx,
            keyed_state_backend=self.backend,
            subtask_index=0,
            parallelism=1,
            segment_size=32768,
            collect=lambda *a: None,
            print_target=None,
            clock_ms=self.clock,
            processing_timers=processing_timers,
        )
        self.op = WindowOperator(setup)
        self.op.open(self.out.output(tags))

    def send(self, *records: tuple[Any, int | None]) -> None:
        """Records with their timestamps, as one batch."""
        values = [r for r, _ in records]
        stamps = [t for _, t in records]
        self.op.process(values, None if all(t is None for t in stamps) else stamps)

    def watermark(self, wm: int) -> None:
        self.op.process_watermark(wm)

    def checkpoint(self) -> Any:
        """The backend's snapshot as a checkpoint takes it: the operator's hook first,
        then the capture, through pickle."""
        self.op.snapshot_state(1)
        return pickle.loads(pickle.dumps(self.backend.snapshot()))

    def fire_processing_timers(self) -> None:
        self.op.timers.fire_processing_timers(self.clock.now)
        self.op._flush()

    def results(self) -> list[tuple[Any, int | None]]:
        return list(zip(self.out.records, self.out.timestamps, strict=True))
