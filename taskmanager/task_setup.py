"""The setup part of a Task (Flink's StreamTask builds the same): the job's Python files,
the operators' payloads, the partitions, gate and writers, each operator's state
(keyed and operator state, restored from the checkpoint the task starts from), the
operator chain and its checkpointing (the subtask's checkpoint coordinator and barrier
handler). ``TaskSetup`` is a part of ``Task``, run on the task thread before its loop;
it uses the task's fields declared below, which ``Task.__init__`` sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from weir.core import config, s3_settings
from weir.core.checkpoint import (
    CheckpointingConfig,
    CheckpointingMode,
    create_checkpoint_storage,
)
from weir.core.deployment import TaskDeploymentDescriptor
from weir.core.errors import NonRecoverableError, UserCodeError
from weir.core.job_graph import OperatorDescriptor, PartitionerKind
from weir.core.key_groups import PyFlinkKeyHasher, key_group_range_for_operator
from weir.core.metrics import MetricRegistry, ScopedMetricGroup
from weir.taskmanager.checkpointing.barrier_handler import (
    AlignedBarrierHandler,
    AtLeastOnceBarrierHandler,
    CheckpointBarrierHandler,
    UnalignedBarrierHandler,
)
from weir.taskmanager.checkpointing.subtask_checkpoint import (
    RestoredTaskState,
    SubtaskCheckpointCoordinator,
)
from weir.taskmanager.mailbox import Mailbox
from weir.taskmanager.network.api import InputGate, ResultPartitionWriter
from weir.taskmanager.operators.base import OperatorSetup
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.operators.function_state import initialize_function_state
from weir.taskmanager.operators.source import SourceOperator
from weir.taskmanager.operators.timers import ProcessingTimeService
from weir.taskmanager.output_flusher import OutputFlusher
from weir.taskmanager.python_dependencies import (
    export_python_executable,
    install_python_files,
    install_python_requirements,
    unpack_python_archives,
)
from weir.taskmanager.record_writer import BufferTimeout, RecordWriter
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend
from weir.taskmanager.state.rocksdb_incremental import restore_native
from weir.taskmanager.state.state_backend_loader import create_keyed_state_backend, rocksdb_root
from weir.taskmanager.task_metrics import register_operator_metrics, register_task_metrics
from weir.taskmanager.user_code import load_user_code

if TYPE_CHECKING:
    import threading

    from weir.taskmanager.task import Task, TaskServices


class PayloadUnpicklingError(UserCodeError):
    """An operator's payload could not be unpickled in the TaskManager."""


class UserCodeImportError(PayloadUnpicklingError, NonRecoverableError):
    """The payload names a module or a class the TaskManager cannot import (a package
    installed where the job was built but not on the workers, or in another version):
    every attempt meets it again, so the job fails at once."""


def _unpickle_payload(descriptor: OperatorDescriptor) -> dict[str, Any]:
    try:
        payload = load_user_code(descriptor.payload)
    except Exception as exc:
        msg = (
            f"operator {descriptor.name!r} ({descriptor.operator_id}): its user code could not "
            f"be loaded in the TaskManager: {type(exc).__name__}: {exc}. Make the modules it "
            "uses importable on the workers (install them in the TaskManagers' Python "
            "environment, or ship them with the job)"
        )
        # Unpickling finds each class and function by importing its module and looking the
        # name up in it (pickle's find_class): an ImportError or AttributeError there is
        # a name the workers lack, and will lack on the next attempt too.
        if isinstance(exc, (ImportError, AttributeError)):
            raise UserCodeImportError(msg) from exc
        raise PayloadUnpicklingError(msg) from exc
    if not isinstance(payload, dict):
        msg = f"operator {descriptor.name!r}: its payload is a {type(payload).__name__}, not a dict"
        raise PayloadUnpicklingError(msg)
    return payload


class TaskSetup:
    # What the task provides (Task.__init__).
    tdd: TaskDeploymentDescriptor
    mailbox: Mailbox
    _services: TaskServices
    _lock: threading.Lock
    _clock: Callable[[], float]
    _clock_ms: Callable[[], int]
    _cancel_requested: bool
    _gate: InputGate | None
    _partitions: list[ResultPartitionWriter]
    _chain: OperatorChain | None
    _source: SourceOperator | None
    _checkpointing: SubtaskCheckpointCoordinator | None
    _barrier_handler: CheckpointBarrierHandler | None
    _restored: RestoredTaskState | None
    _backends: list[KeyedStateBackend]
    _unaligned: bool
    _final_checkpoint: bool
    _open_channels: int
    _processing_timers: ProcessingTimeService
    _segment_size: int
    _compress: bool
    _max_frame_size: int
    _timeout_ms: int
    _buffer_timeout: BufferTimeout
    _flusher: OutputFlusher
    _operator_groups: dict[str, ScopedMetricGroup]
    input_watermark: Callable[[], int]

    def _initialize(self) -> None:
        tdd = self.tdd
        vertex = tdd.vertex
        # Before the functions are unpickled: they may import what these bring. On the task
        # thread, whose current directory is the job's working directory.
        install_python_files(tdd.job_config)
        install_python_requirements(tdd.job_config)
        unpack_python_archives(tdd.job_config)
        export_python_executable(tdd.job_config)
        # The job's s3.* keys, over the TaskManager's, before anything opens s3:// URLs.
        s3_settings.configure(tdd.job_config)
        payloads = [_unpickle_payload(op) for op in vertex.operators]
        if tdd.restored_state is not None:
            self._restored = RestoredTaskState(tdd.restored_state, vertex.max_parallelism)
        network = self._services.network
        operator_names = {op.operator_id: op.name for op in vertex.operators}
        writers = []
        for descriptor in tdd.result_partitions:
            partition = network.create_result_partition(descriptor)
            with self._lock:
                self._partitions.append(partition)
            writers.append(
                RecordWriter(
                    partition,
                    descriptor,
                    segment_size=self._segment_size,
                    compress=self._compress,
                    max_frame_size=self._max_frame_size,
                    operator_name=operator_names.get(descriptor.edge.source_operator, ""),
                )
            )
        if tdd.input_gates:
            gate = network.create_input_gate(tdd.input_gates)
            with self._lock:
                self._gate = gate
            self.mailbox.set_waker(gate.wakeup)
            self._open_channels = sum(len(g.channels) for g in tdd.input_gates)
        setups = [
            self._setup(op, payload) for op, payload in zip(vertex.operators, payloads, strict=True)
        ]
        chain = OperatorChain(setups, writers, self._input_key_type())
        self._chain = chain
        if self._services.metric_group is not None:
            register_task_metrics(self._services.metric_group, cast("Task", self))
        self._buffer_timeout = BufferTimeout(self._timeout_ms, self._clock)
        self._flusher = OutputFlusher(writers, self._buffer_timeout, tdd.task_name)
        self._initialize_function_state(setups)
        chain.open()
        if self._services.metric_group is not None:
            register_operator_metrics(self._operator_groups, chain, self.input_watermark)
        self._setup_checkpointing(chain)
        if isinstance(chain.head, SourceOperator):
            with self._lock:
                self._source = chain.head
            if self._cancel_requested:  # cancel() ran before the source was known
                chain.head.cancel_function()

    def _initialize_network(self) -> None:
        """Partitions and gate only: a task finished on restore runs no operator."""
        network = self._services.network
        for descriptor in self.tdd.result_partitions:
            partition = network.create_result_partition(descriptor)
            with self._lock:
                self._partitions.append(partition)
        if self.tdd.input_gates:
            gate = network.create_input_gate(self.tdd.input_gates)
            with self._lock:
                self._gate = gate
            self.mailbox.set_waker(gate.wakeup)

    def _initialize_function_state(self, setups: list[OperatorSetup]) -> None:
        """Before ``open``: user functions with state hooks initialize their state, fresh
        or restored (``weir.core.checkpointed_function`` has both forms)."""
        restored = self._restored is not None
        for setup in setups:
            # The same functions whose snapshot_state a checkpoint stores (the chain's user
            # functions, legacy SourceFunctions included).
            function = setup.payload.get("function") or setup.payload.get("source_function")
            if function is None:
                continue
            initialize_function_state(
                function,
                setup.operator_state_backend,
                keyed_store=(
                    setup.runtime_context if setup.keyed_state_backend is not None else None
                ),
                restored=restored,
                restored_checkpoint_id=self.tdd.restored_checkpoint_id,
                operator_name=setup.descriptor.name,
            )

    def _setup_checkpointing(self, chain: OperatorChain) -> None:
        tdd = self.tdd
        settings = CheckpointingConfig.from_config(tdd.job_config)
        if not settings.enabled:
            return
        self._final_checkpoint = settings.final_checkpoints
        self._checkpointing = SubtaskCheckpointCoordinator(
            attempt_id=tdd.execution_attempt_id,
            subtask_index=tdd.subtask_index,
            storage=create_checkpoint_storage(tdd.job_config, tdd.job_id),
            chain=chain,
            partitions=list(self._partitions),
            acknowledge=self._services.acknowledge_checkpoint,
            decline=self._services.decline_checkpoint,
            compress=settings.snapshot_compression,
            has_inputs=bool(tdd.input_gates),
        )
        exactly_once = settings.mode is CheckpointingMode.EXACTLY_ONCE
        self._unaligned = exactly_once and settings.unaligned
        if tdd.input_gates:
            channels = [len(g.channels) for g in tdd.input_gates]
            handler: CheckpointBarrierHandler
            if self._unaligned:
                handler = UnalignedBarrierHandler(channels)
            elif exactly_once:
                handler = AlignedBarrierHandler(channels)
            else:
                handler = AtLeastOnceBarrierHandler(channels)
            self._barrier_handler = handler

    def _checkpoint_storage_shares(self) -> bool:
        """The job's checkpoint storage keeps shared files (incremental checkpoints)."""
        job_config = self.tdd.job_config
        directory = config.get_with_deprecated_keys(job_config, config.CHECKPOINTING_DIR)
        kind = config.get(job_config, config.CHECKPOINTING_STORAGE)
        return kind == "filesystem" or (not kind and bool(directory))

    def _input_key_type(self) -> str:
        """The declared key type of the keyed input edges (their senders route by it)."""
        for gate in self.tdd.input_gates:
            if gate.edge.partitioner is PartitionerKind.KEY_GROUP and gate.edge.partitioner_payload:
                payload = load_user_code(gate.edge.partitioner_payload)
                return str(payload.get("key_type", "pickled"))
        return "pickled"

    def _setup(self, descriptor: OperatorDescriptor, payload: dict[str, Any]) -> OperatorSetup:
        tdd = self.tdd
        vertex = tdd.vertex
        backend: KeyedStateBackend | None = None
        if any(s is not None for s in payload.get("key_selectors") or ()):
            backend = create_keyed_state_backend(
                tdd.job_config,
                name=f"{descriptor.operator_id}-{tdd.subtask_index}",
                max_parallelism=vertex.max_parallelism,
                key_group_range=key_group_range_for_operator(
                    vertex.max_parallelism, vertex.parallelism, tdd.subtask_index
                ),
                key_hasher=PyFlinkKeyHasher(self._input_key_type()),
                clock_ms=self._clock_ms,
                shared_state=self._checkpoint_storage_shares(),
            )
            self._backends.append(backend)
            if self._restored is not None:
                keyed, native = self._restored.keyed_state(
                    str(descriptor.operator_id), backend.key_group_range
                )
                if keyed:
                    backend.restore(keyed)
                if native:
                    restore_native(backend, native, rocksdb_root(tdd.job_config))
        # Operator state stays on the heap with either keyed state backend, as Flink's
        # DefaultOperatorStateBackend does beside RocksDB.
        operator_state = DefaultOperatorStateBackend()
        if self._restored is not None:
            operator_state.restore(self._restored.operator_state(str(descriptor.operator_id)))
        context = StreamingRuntimeContext(
            task_name=vertex.name,
            task_name_with_subtasks=tdd.task_name,
            number_of_parallel_subtasks=vertex.parallelism,
            max_number_of_parallel_subtasks=vertex.max_parallelism,
            index_of_this_subtask=tdd.subtask_index,
            attempt_number=tdd.attempt_number,
            job_parameters=tdd.job_parameters,
            keyed_state_backend=backend,
            metric_group=self._operator_metric_group(descriptor),
            register_queryable=self._queryable_state_registrar(descriptor, backend),
        )
        return OperatorSetup(
            descriptor=descriptor,
            payload=payload,
            runtime_context=context,
            keyed_state_backend=backend,
            subtask_index=tdd.subtask_index,
            parallelism=vertex.parallelism,
            segment_size=self._segment_size,
            collect=self._services.collect,
            print_target=self._services.print_target,
            clock_ms=self._clock_ms,
            processing_timers=self._processing_timers,
            batch_mode=config.get(tdd.job_config, config.RUNTIME_MODE) == "BATCH",
            config=tdd.job_config,
            restored_source_state=(
                None
                if self._restored is None
                else self._restored.source_state(str(descriptor.operator_id))
            ),
            restored_checkpoint_id=tdd.restored_checkpoint_id,
            operator_state_backend=operator_state,
            post_mail=self.mailbox.put,
            canceled=lambda: self._cancel_requested,
        )

    def _queryable_state_registrar(
        self, descriptor: OperatorDescriptor, backend: KeyedStateBackend | None
    ) -> Callable[[str, Callable[[], Any]], None] | None:
        register = self._services.register_kv_state
        if register is None or backend is None:
            return None
        operator_id, put_mail = str(descriptor.operator_id), self.mailbox.put
        return lambda name, read: register(operator_id, name, backend, read, put_mail)

    def _operator_metric_group(self, descriptor: OperatorDescriptor) -> ScopedMetricGroup:
        """The group a function's ``get_metrics_group()`` returns (scope
        taskmanager.job.task.operator); without a task group, one reported nowhere."""
        task_group = self._services.metric_group
        if task_group is None:
            task_group = ScopedMetricGroup(MetricRegistry(), ("taskmanager", "job", "task"), {})
        group = task_group.child(
            "operator",
            {"operator_id": str(descriptor.operator_id), "operator_name": descriptor.name},
        )
        self._operator_groups[str(descriptor.operator_id)] = group
        return group
