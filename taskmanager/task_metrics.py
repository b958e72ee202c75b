"""A task's system metrics with Flink's names (TaskIOMetricGroup and friends), and those of
each operator in its chain (OperatorIOMetricGroup).

Everything here is a gauge or a rate view over counters the task already keeps: the task
thread counts per buffer (records and bytes in, in its input processor; records and
bytes out, in its ``RecordWriter``s) and times its waits (idle in the input gate or a source's empty
poll, back-pressured in a full result partition), never per record. Busy time is what is
left of a second, as Flink computes it since 1.13:
``busyTimeMsPerSecond = 1000 - idleTimeMsPerSecond - backPressuredTimeMsPerSecond``.

An operator's records are counted per batch where the chain hands them on
(``weir.taskmanager.operators.operator_io``); as in Flink, a source's ``numRecordsIn`` is
the records it read, which is what it emits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from weir.core.job_info import IOMetricsInfo
from weir.core.metrics import RateView, ScopedMetricGroup
from weir.core.metrics.metric_types import GaugeImpl

if TYPE_CHECKING:
    from weir.taskmanager.network.api import InputGate, ResultPartitionWriter
    from weir.taskmanager.operators.chain import OperatorChain
    from weir.taskmanager.operators.operator_io import OperatorIOCounters

__all__ = ["MeteredTask", "final_io_metrics", "register_operator_metrics", "register_task_metrics"]


class MeteredTask(Protocol):
    """What the metrics read of a task (``weir.taskmanager.task.Task``), from any thread,
    without a lock."""

    @property
    def chain(self) -> OperatorChain | None: ...
    @property
    def input_gate(self) -> InputGate | None: ...
    @property
    def result_partitions(self) -> Sequence[ResultPartitionWriter]: ...
    @property
    def records_in(self) -> int: ...
    @property
    def bytes_in(self) -> int: ...
    @property
    def idle_ns(self) -> int: ...
    @property
    def back_pressured_ns(self) -> int: ...
    def input_watermark(self) -> int: ...


# Flink's TimerGauge reports the time measured over its last update interval; a short
# span keeps the busy/idle/back-pressured split current while a dashboard watches it.
_TIME_SPAN_S = 5.0
# numRecordsInPerSecond and the other meters: Flink's MeterView default span.
_METER_SPAN_S = 60.0


def _records_out(task: MeteredTask) -> int:
    chain = task.chain
    return sum(w.records_written for w in chain.writers) if chain is not None else 0


def _bytes_out(task: MeteredTask) -> int:
    chain = task.chain
    return sum(w.bytes_written for w in chain.writers) if chain is not None else 0


def _idle_ms(task: MeteredTask) -> float:
    gate = task.input_gate
    waited = task.idle_ns + (gate.stats.idle_ns if gate is not None else 0)
    return waited / 1e6


def _back_pressured_ms(task: MeteredTask) -> float:
    waited = task.back_pressured_ns + sum(p.stats.back_pressured_ns for p in task.result_partitions)
    return waited / 1e6


def final_io_metrics(task: MeteredTask) -> IOMetricsInfo:
    """The task's counts as it ends, sent with its final state to the JobMaster (whose
    REST API shows them once this TaskManager no longer reports the task)."""
    return IOMetricsInfo(
        num_records_in=task.records_in,
        num_records_out=_records_out(task),
        num_bytes_in=task.bytes_in,
        num_bytes_out=_bytes_out(task),
        accumulated_idle_ms=_idle_ms(task),
        accumulated_back_pressured_ms=_back_pressured_ms(task),
    )


def register_task_metrics(group: ScopedMetricGroup, task: MeteredTask) -> None:
    """Register the task's gauges and rates in ``group``; called once its chain exists."""

    def records_out() -> int:
        return _records_out(task)

    def bytes_out() -> int:
        return _bytes_out(task)

    def idle_ms() -> float:
        return _idle_ms(task)

    def back_pressured_ms() -> float:
        return _back_pressured_ms(task)

    def output_watermark() -> int:
        chain = task.chain
        if chain is None:
            return task.input_watermark()
        if chain.writers:
            return min(w.last_watermark for w in chain.writers)
        return getattr(chain.operators[-1], "current_watermark", task.input_watermark())

    def late_dropped() -> int:
        chain = task.chain
        if chain is None:
            return 0
        return sum(getattr(op, "num_late_records_dropped", 0) for op in chain.operators)

    def input_queue() -> int:
        gate = task.input_gate
        return gate.queued_buffers() if gate is not None else 0

    def output_queue() -> int:
        return sum(p.queued_buffers() for p in task.result_partitions)

    idle_rate = RateView(idle_ms, _TIME_SPAN_S)
    back_pressured_rate = RateView(back_pressured_ms, _TIME_SPAN_S)

    def busy_ms_per_second() -> float:
        return max(0.0, 1000.0 - idle_rate.get_rate() - back_pressured_rate.get_rate())

    def rate_of(source: Callable[[], float], span: float) -> Callable[[], float]:
        return RateView(source, span).get_rate

    gauges: dict[str, Callable[[], float]] = {
        "numRecordsIn": lambda: task.records_in,
        "numRecordsOut": records_out,
        "numBytesIn": lambda: task.bytes_in,
        "numBytesOut": bytes_out,
        "numRecordsInPerSecond": rate_of(lambda: task.records_in, _METER_SPAN_S),
        "numRecordsOutPerSecond": rate_of(records_out, _METER_SPAN_S),
        "numBytesInPerSecond": rate_of(lambda: task.bytes_in, _METER_SPAN_S),
        "numBytesOutPerSecond": rate_of(bytes_out, _METER_SPAN_S),
        "accumulatedIdleTime": idle_ms,
        "accumulatedBackPressuredTime": back_pressured_ms,
        "idleTimeMsPerSecond": idle_rate.get_rate,
        "backPressuredTimeMsPerSecond": back_pressured_rate.get_rate,
        "busyTimeMsPerSecond": busy_ms_per_second,
        "currentInputWatermark": task.input_watermark,
        "currentOutputWatermark": output_watermark,
        "numLateRecordsDropped": late_dropped,
        "inputQueueLength": input_queue,
        "outputQueueLength": output_queue,
    }
    group.register_metrics({name: GaugeImpl(read) for name, read in gauges.items()})


def register_operator_metrics(
    groups: Mapping[str, ScopedMetricGroup],
    chain: OperatorChain,
    head_input_watermark: Callable[[], int],
) -> None:
    """Register each operator's counts and watermarks in its group (``groups`` by operator
    id, scope taskmanager.job.task.operator); called once the chain is open."""
    for op in chain.operators:
        descriptor = op.setup.descriptor
        group = groups.get(str(descriptor.operator_id))
        if group is None:
            continue
        counters = chain.io[descriptor.operator_id]
        if descriptor.input_count == 0:  # a source: what it read is what it emits
            records_in: Callable[[], float] = _main_out(counters)
        else:
            records_in = _records_in(counters)
        records_out = _records_out_of(counters)
        gauges: dict[str, Callable[[], float]] = {
            "numRecordsIn": records_in,
            "numRecordsOut": records_out,
            "numRecordsInPerSecond": RateView(records_in, _METER_SPAN_S).get_rate,
            "numRecordsOutPerSecond": RateView(records_out, _METER_SPAN_S).get_rate,
            "currentOutputWatermark": _output_watermark(counters),
        }
        if descriptor.input_count > 0:
            upstream = counters.upstream
            gauges["currentInputWatermark"] = (
                head_input_watermark if upstream is None else _output_watermark(upstream)
            )
        if hasattr(op, "num_late_records_dropped"):
            gauges["numLateRecordsDropped"] = _late_dropped(op)
        group.register_metrics({name: GaugeImpl(read) for name, read in gauges.items()})


# Readers of the counters, each bound to one operator's (no lambdas in a loop).
def _main_out(counters: OperatorIOCounters) -> Callable[[], float]:
    return lambda: counters.main_out


def _records_in(counters: OperatorIOCounters) -> Callable[[], float]:
    return lambda: counters.num_records_in


def _records_out_of(counters: OperatorIOCounters) -> Callable[[], float]:
    return lambda: counters.num_records_out


def _output_watermark(counters: OperatorIOCounters) -> Callable[[], float]:
    return lambda: counters.output_watermark


def _late_dropped(op: object) -> Callable[[], float]:
    return lambda: getattr(op, "num_late_records_dropped", 0)
