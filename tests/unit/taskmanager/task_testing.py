"""Test doubles and builders for task tests: an in-memory network, JobVertices, TDDs."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import cloudpickle

from weir.core.deployment import (
    ExecutionState,
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskDeploymentDescriptor,
    TaskManagerLocation,
)
from weir.core.ids import (
    AllocationId,
    ExecutionAttemptId,
    JobId,
    JobVertexId,
    OperatorId,
    ResourceId,
    new_hex_id,
)
from weir.core.job_graph import (
    JobEdge,
    JobVertex,
    OperatorDescriptor,
    OperatorKind,
    PartitionerKind,
    SerializerKind,
)
from weir.core.serializers import deserialize_batch
from weir.core.throwable_classifier import ThrowableType
from weir.taskmanager.network.api import BufferKind, PartitionClosedError, PartitionStats
from weir.taskmanager.task import Task, TaskServices

LOCATION = TaskManagerLocation(ResourceId("tm"), "127.0.0.1", 0)


class TestingResultPartition:
    __test__ = False

    def __init__(self, env: TestingNetworkEnvironment, descriptor: ResultPartitionDescriptor):
        self.env = env
        self.partition_id = descriptor.partition_id
        self.num_subpartitions = descriptor.num_subpartitions
        self.stats = PartitionStats()
        self.queues: list[collections.deque[tuple[BufferKind, bytes]]] = [
            collections.deque() for _ in range(descriptor.num_subpartitions)
        ]
        self.emitted: list[tuple[int, bytes]] = []
        self.finished = False
        self.released = False

    def _put(self, sub: int, kind: BufferKind, payload: bytes, *, wait: bool) -> None:
        cond = self.env.cond
        with cond:
            while wait and len(self.queues[sub]) >= self.env.max_buffers and not self.released:
                self.stats.blocked_emits += 1
                self.env.emit_blocked.set()
                cond.wait()
            if self.released:
                raise PartitionClosedError(str(self.partition_id))
            self.queues[sub].append((kind, payload))
            self.stats.max_queued = max(self.stats.max_queued, len(self.queues[sub]))
            if kind is BufferKind.DATA:
                self.stats.buffers_emitted += 1
                self.emitted.append((sub, payload))
                self.env.log.append(("emit", sub, payload))
            cond.notify_all()

    def emit(self, subpartition: int, buffer: bytes) -> None:
        self._put(subpartition, BufferKind.DATA, buffer, wait=True)

    def is_available(self) -> bool:
        with self.env.cond:
            return all(len(q) < self.env.max_buffers for q in self.queues)

    def emit_event(self, subpartition: int, event: bytes) -> None:
        self._put(subpartition, BufferKind.EVENT, event, wait=False)

    def broadcast_event(self, event: bytes) -> None:
        for sub in range(self.num_subpartitions):
            self.emit_event(sub, event)

    def finish(self) -> None:
        for sub in range(self.num_subpartitions):
            self._put(sub, BufferKind.END_OF_PARTITION, b"", wait=False)
        self.finished = True

    def release(self, cause: BaseException | None = None) -> None:
        with self.env.cond:
            self.released = True
            self.env.cond.notify_all()

    def records(self, sub: int | None = None) -> list[Any]:
        out: list[Any] = []
        for s, payload in self.emitted:
            if sub is None or s == sub:
                out.extend(deserialize_batch(payload))
        return out


class TestingInputGate:
    __test__ = False

    def __init__(self, env: TestingNetworkEnvironment, descriptors: Sequence[InputGateDescriptor]):
        self.env = env
        self.num_gates = len(descriptors)
        self._channels = [
            (g, c, ch.partition_id, ch.subpartition_index)
            for g, d in enumerate(descriptors)
            for c, ch in enumerate(d.channels)
        ]
        self._counts = [len(d.channels) for d in descriptors]
        self._ended = 0
        self._next = 0
        self._woken = False
        self.closed = False
        self.polls = 0

    def num_channels(self, gate_index: int) -> int:
        return self._counts[gate_index]

    def _take(self) -> tuple[int, int, BufferKind, bytes] | None:
        n = len(self._channels)
        for i in range(n):
            g, c, pid, sub = self._channels[(self._next + i) % n]
            partition = self.env.partitions.get(pid)
            if partition is not None and partition.queues[sub]:
                self._next = (self._next + i + 1) % n
                kind, payload = partition.queues[sub].popleft()
                if kind is BufferKind.END_OF_PARTITION:
                    self._ended += 1
                return g, c, kind, payload
        return None

    def poll(self, timeout: float | None) -> tuple[int, int, BufferKind, bytes] | None:
        cond = self.env.cond
        with cond:
            self.polls += 1
            while True:
                if self.closed:
                    raise PartitionClosedError("gate closed")
                if self._woken:
                    self._woken = False
                    return None
                item = self._take()
                if item is not None:
                    cond.notify_all()
                    return item
                self.env.poll_blocked.set()
                if not cond.wait(timeout):
                    return None

    def wakeup(self) -> None:
        with self.env.cond:
            self._woken = True
            self.env.cond.notify_all()

    def is_finished(self) -> bool:
        return self._ended == len(self._channels)

    def close(self) -> None:
        with self.env.cond:
            self.closed = True
            self.env.cond.notify_all()


class TestingNetworkEnvironment:
    __test__ = False

    """Every partition and gate of the tests in one process, under one condition."""

    def __init__(self, max_buffers: int = 1000) -> None:
        self.cond = threading.Condition()
        self.max_buffers = max_buffers
        self.partitions: dict[ResultPartitionId, TestingResultPartition] = {}
        self.gates: list[TestingInputGate] = []
        self.log: list[tuple[Any, ...]] = []
        self.emit_blocked = threading.Event()
        self.poll_blocked = threading.Event()

    def start(self, on_fatal_error: object = None) -> int:
        return 0

    def create_result_partition(
        self, descriptor: ResultPartitionDescriptor
    ) -> TestingResultPartition:
        with self.cond:
            partition = TestingResultPartition(self, descriptor)
            self.partitions[descriptor.partition_id] = partition
            self.cond.notify_all()
            return partition

    def create_input_gate(self, descriptors: tuple[InputGateDescriptor, ...]) -> TestingInputGate:
        gate = TestingInputGate(self, descriptors)
        self.gates.append(gate)
        return gate

    def close(self) -> None:
        pass


# --- building jobs ---------------------------------------------------------------------


def op(
    kind: OperatorKind,
    payload: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    outputs: Sequence[str] = (),
    op_id: str | None = None,
    input_count: int = 1,
) -> OperatorDescriptor:
    return OperatorDescriptor(
        operator_id=OperatorId(op_id or new_hex_id()),
        name=name or kind.value,
        kind=kind,
        payload=cloudpickle.dumps(payload or {}),
        chained_outputs=tuple(OperatorId(o) for o in outputs),
        input_count=0 if kind is OperatorKind.SOURCE else input_count,
    )


def chain(*descriptors: OperatorDescriptor) -> list[OperatorDescriptor]:
    """Link a straight chain: each operator feeds the next."""
    out = list(descriptors)
    for i in range(len(out) - 1):
        d = out[i]
        out[i] = OperatorDescriptor(
            d.operator_id,
            d.name,
            d.kind,
            d.payload,
            (out[i + 1].operator_id,),
            d.uid,
            d.input_count,
        )
    return out


def vertex(
    operators: Sequence[OperatorDescriptor],
    *,
    parallelism: int = 1,
    max_parallelism: int = 128,
    name: str = "vertex",
) -> JobVertex:
    return JobVertex(
        JobVertexId(new_hex_id()), name, parallelism, max_parallelism, tuple(operators)
    )


@dataclass
class Deployment:
    """The TDDs of a small job: vertices connected by edges, all subtasks."""

    vertices: list[JobVertex]
    edges: list[JobEdge] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)
    attempts: dict[tuple[str, int], ExecutionAttemptId] = field(default_factory=dict)

    def connect(
        self,
        source: JobVertex,
        target: JobVertex,
        partitioner: PartitionerKind,
        payload: dict[str, Any] | None = None,
        *,
        input_index: int = 0,
        source_operator: OperatorDescriptor | None = None,
        serializer: SerializerKind = SerializerKind.PICKLE,
    ) -> JobEdge:
        edge = JobEdge(
            source.vertex_id,
            (source_operator or source.operators[-1]).operator_id,
            target.vertex_id,
            input_index,
            partitioner,
            cloudpickle.dumps(payload) if payload else b"",
            serializer,
        )
        self.edges.append(edge)
        return edge

    def attempt(self, v: JobVertex, i: int) -> ExecutionAttemptId:
        return self.attempts.setdefault((v.vertex_id, i), ExecutionAttemptId(new_hex_id()))

    def _vertex(self, vid: str) -> JobVertex:
        return next(v for v in self.vertices if v.vertex_id == vid)

    @staticmethod
    def _pointwise(kind: PartitionerKind) -> bool:
        return kind in (PartitionerKind.FORWARD, PartitionerKind.RESCALE)

    def _consumers(self, edge: JobEdge, producer: int) -> tuple[int, ...]:
        p = self._vertex(edge.source_vertex).parallelism
        c = self._vertex(edge.target_vertex).parallelism
        if not self._pointwise(edge.partitioner):
            return tuple(range(c))
        if p >= c:
            return (producer * c // p,)
        return tuple(range(producer * c // p, (producer + 1) * c // p))

    def tdd(self, v: JobVertex, subtask: int = 0) -> TaskDeploymentDescriptor:
        partitions = []
        gates = []
        for index, edge in enumerate(self.edges):
            if edge.source_vertex == v.vertex_id:
                consumers = self._consumers(edge, subtask)
                target = self._vertex(edge.target_vertex)
                partitions.append(
                    ResultPartitionDescriptor(
                        ResultPartitionId(self.attempt(v, subtask), index),
                        edge,
                        len(consumers),
                        consumers,
                        target.parallelism,
                        target.max_parallelism,
                    )
                )
            if edge.target_vertex == v.vertex_id:
                producer_vertex = self._vertex(edge.source_vertex)
                channels = []
                for producer in range(producer_vertex.parallelism):
                    consumers = self._consumers(edge, producer)
                    if subtask in consumers:
                        channels.append(
                            InputChannelDescriptor(
                                ResultPartitionId(self.attempt(producer_vertex, producer), index),
                                consumers.index(subtask),
                                LOCATION,
                                True,
                            )
                        )
                gates.append(InputGateDescriptor(index, edge, tuple(channels)))
        return TaskDeploymentDescriptor(
            job_id=JobId("job"),
            job_name="test job",
            vertex=v,
            subtask_index=subtask,
            attempt_number=0,
            execution_attempt_id=self.attempt(v, subtask),
            allocation_id=AllocationId("alloc"),
            input_gates=tuple(gates),
            result_partitions=tuple(partitions),
            job_config=dict(self.config),
            job_parameters=dict(self.parameters),
        )


class Recorder:
    """TaskServices callbacks that remember what the tasks reported and collected."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[str, list[ExecutionState]] = collections.defaultdict(list)
        self.throwable_types: dict[str, list[ThrowableType]] = collections.defaultdict(list)
        self.collected: dict[tuple[str, int], list[Any]] = collections.defaultdict(list)
        self.collect_calls: list[tuple[str, int, int, bool]] = []
        self.collect_epochs: list[int] = []
        """The checkpoint epoch of each collect call, in order."""

    def report_state(
        self,
        attempt: ExecutionAttemptId,
        state: ExecutionState,
        cause: str | None,
        throwable_type: ThrowableType,
    ) -> None:
        with self.lock:
            self.states[attempt].append(state)
            self.throwable_types[attempt].append(throwable_type)

    def collect(self, operator_id: str, subtask: int, buffer: bytes, end: bool, epoch: int) -> None:
        records = deserialize_batch(buffer)
        with self.lock:
            self.collected[(operator_id, subtask)].extend(records)
            self.collect_calls.append((operator_id, subtask, len(records), end))
            self.collect_epochs.append(epoch)

    def records(self, operator: OperatorDescriptor) -> list[Any]:
        out: list[Any] = []
        for (oid, _sub), records in sorted(self.collected.items()):
            if oid == operator.operator_id:
                out.extend(records)
        return out


def run_tasks(
    deployment: Deployment,
    env: TestingNetworkEnvironment | None = None,
    recorder: Recorder | None = None,
    print_target: str | None = None,
    only: Sequence[JobVertex] | None = None,
    **task_kwargs: Any,
) -> tuple[list[Task], Recorder]:
    env = env or TestingNetworkEnvironment()
    recorder = recorder or Recorder()
    services = TaskServices(env, recorder.report_state, recorder.collect, print_target)
    tasks = [
        Task(deployment.tdd(v, i), services, **task_kwargs)
        for v in (only or deployment.vertices)
        for i in range(v.parallelism)
    ]
    for t in tasks:
        t.start()
    for t in tasks:
        assert t.join(30), f"{t.tdd.task_name} did not end"
    return tasks, recorder


# --- sources ---------------------------------------------------------------------------


class ListReader:
    def __init__(self, records: list[Any], batch: int, idle_every: int = 0) -> None:
        self._records = records
        self._pos = 0
        self._batch = batch
        self._idle_every = idle_every
        self._polls = 0
        self.closed = False

    def poll_batch(self, max_records: int) -> list[Any] | None:
        self._polls += 1
        if self._idle_every and self._polls % self._idle_every == 0:
            return []
        if self._pos >= len(self._records):
            return None
        n = min(max_records, self._batch)
        out = self._records[self._pos : self._pos + n]
        self._pos += n
        return out

    def close(self) -> None:
        self.closed = True


class ListSource:
    """A bounded source over a list, split over the subtasks round-robin."""

    def __init__(self, records: list[Any], batch: int = 1024, idle_every: int = 0) -> None:
        self.records = records
        self.batch = batch
        self.idle_every = idle_every

    def create_reader(self, context: Any) -> ListReader:
        i = context.get_index_of_this_subtask()
        p = context.get_number_of_parallel_subtasks()
        return ListReader(self.records[i::p], self.batch, self.idle_every)


class EndlessSource:
    def create_reader(self, context: Any) -> Any:
        class Reader:
            def poll_batch(self, max_records: int) -> list[Any]:
                return list(range(max_records))

            def close(self) -> None:
                pass

        return Reader()


def source_op(records: list[Any], batch: int = 1024, **kwargs: Any) -> OperatorDescriptor:
    return op(OperatorKind.SOURCE, {"source": ListSource(records, batch)}, **kwargs)


def collect_op(**kwargs: Any) -> OperatorDescriptor:
    return op(OperatorKind.COLLECT, {}, **kwargs)


Fn = Callable[..., Any]
