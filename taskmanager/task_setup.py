"""The setup of a Task (Flink's StreamTask builds the same): ``TaskSetup`` builds, on the
task thread before its loop, the parts the task then holds and runs, one stage at a time
in the order the task calls them:

1. ``load_user_code``: the job's Python files, then the operators' payloads;
   ``restore_state``: the checkpoint the task starts from, if any;
2. ``create_network``: the result partitions with their RecordWriters, and the input
   gate (``TaskNetwork``);
3. ``create_operators``: each operator's keyed and operator state (restored), its
   runtime context, and the operator chain built on them, not opened yet
   (``TaskOperators``); ``initialize_function_state`` then lets user functions
   initialize theirs, before the task opens the chain;
4. ``create_checkpointing``, once the chain is open: the subtask's checkpoint
   coordinator and barrier handler (``TaskCheckpointing``, None when checkpointing is
   off).

A stage that fails releases what it made itself (partitions, gate, state backends);
what a stage returned is the task's to release. The builder keeps nothing from one stage
to the next: what a stage needs it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
from weir.taskmanager.checkpointing.key_placement import regroup
from weir.taskmanager.checkpointing.subtask_checkpoint import (
    RestoredTaskState,
    SubtaskCheckpointCoordinator,
)
from weir.taskmanager.mailbox import Action
from weir.taskmanager.network.api import InputGate, ResultPartitionWriter
from weir.taskmanager.operators.base import OperatorSetup
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.operators.function_state import initialize_function_state
from weir.taskmanager.operators.timers import ProcessingTimeService
from weir.taskmanager.python_dependencies import (
    export_python_executable,
    install_python_files,
    install_python_requirements,
    unpack_python_archives,
)
from weir.taskmanager.record_writer import RecordWriter
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend
from weir.taskmanager.state.rocksdb_incremental import restore_native, to_canonical
from weir.taskmanager.state.state_backend_loader import create_keyed_state_backend, rocksdb_root
from weir.taskmanager.task_services import TaskServices
from weir.taskmanager.user_code import load_user_code

logger = logging.getLogger(__name__)


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


@dataclass(frozen=True, slots=True)
class TaskNetwork:
    """A task's side of the data plane: a result partition per output edge with the
    RecordWriter that fills it, and the input gate over every input channel."""

    partitions: tuple[ResultPartitionWriter, ...]
    writers: tuple[RecordWriter, ...]
    """Empty for a task that runs no operator (finished on restore)."""
    gate: InputGate | None
    """None for a task without inputs (a source)."""


@dataclass(frozen=True, slots=True)
class TaskOperators:
    """The operator chain, built and not opened, and what it was built on."""

    chain: OperatorChain
    setups: tuple[OperatorSetup, ...]
    """Per operator, head first: its payload, runtime context and state."""
    backends: tuple[KeyedStateBackend, ...]
    """The keyed state backends of the keyed operators, to dispose when the task ends."""
    operator_groups: Mapping[str, ScopedMetricGroup]
    """Each operator's metric group (scope taskmanager.job.task.operator), by id."""


@dataclass(frozen=True, slots=True)
class TaskCheckpointing:
    """How the task takes checkpoints: its coordinator, and for a task with inputs the
    barrier handler that decides when."""

    coordinator: SubtaskCheckpointCoordinator
    barrier_handler: CheckpointBarrierHandler | None
    """None for a task without inputs (a source)."""
    unaligned: bool
    """EXACTLY_ONCE with unaligned checkpoints: barriers overtake in-flight data."""
    final_checkpoint: bool
    """FLIP-147: at the end of input the task waits for a checkpoint before it ends."""


class TaskSetup:
    """Builds the parts of one task; see the module docstring for its stages."""

    def __init__(
        self,
        tdd: TaskDeploymentDescriptor,
        services: TaskServices,
        *,
        processing_timers: ProcessingTimeService,
        post_mail: Callable[[Action], None],
        canceled: Callable[[], bool],
        clock_ms: Callable[[], int],
    ) -> None:
        """``processing_timers``, ``post_mail`` (the task's mailbox) and ``canceled`` (the
        task was cancelled) are the task's, handed to its operators; ``clock_ms`` is the
        processing time their state (TTL) and user code see."""
        self._tdd = tdd
        self._services = services
        self._processing_timers = processing_timers
        self._post_mail = post_mail
        self._canceled = canceled
        self._clock_ms = clock_ms
        cfg = tdd.job_config
        self._segment_size = config.get(cfg, config.SEGMENT_SIZE)
        self._compress = config.get(cfg, config.NETWORK_COMPRESSION) == "lz4"
        self._max_frame_size = config.get(cfg, config.MAX_FRAME_SIZE)

    # --- 1. user code and restored state --------------------------------------------------

    def load_user_code(self) -> list[dict[str, Any]]:
        """The operators' payloads, head first, once the job's Python files are in place:
        the functions may import what these bring. On the task thread, whose current
        directory is the job's working directory."""
        job_config = self._tdd.job_config
        install_python_files(job_config)
        install_python_requirements(job_config)
        unpack_python_archives(job_config)
        export_python_executable(job_config)
        # The job's s3.* keys, over the TaskManager's, before anything opens s3:// URLs.
        s3_settings.configure(job_config)
        return [_unpickle_payload(op) for op in self._tdd.vertex.operators]

    def restore_state(self) -> RestoredTaskState | None:
        """The checkpoint the task starts from (None: it starts fresh)."""
        tdd = self._tdd
        if tdd.restored_state is None:
            return None
        return RestoredTaskState(tdd.restored_state, tdd.vertex.max_parallelism)

    # --- 2. the network -----------------------------------------------------------------

    def create_network(self, *, writers: bool = True) -> TaskNetwork:
        """The partitions (each with its RecordWriter, unless ``writers`` is False: a task
        finished on restore runs no operator), then the gate."""
        tdd = self._tdd
        network = self._services.network
        operator_names = {op.operator_id: op.name for op in tdd.vertex.operators}
        partitions: list[ResultPartitionWriter] = []
        made: list[RecordWriter] = []
        try:
            for descriptor in tdd.result_partitions:
                partition = network.create_result_partition(descriptor)
                partitions.append(partition)
                if writers:
                    made.append(
                        RecordWriter(
                            partition,
                            descriptor,
                            segment_size=self._segment_size,
                            compress=self._compress,
                            max_frame_size=self._max_frame_size,
                            operator_name=operator_names.get(descriptor.edge.source_operator, ""),
                        )
                    )
            gate = network.create_input_gate(tdd.input_gates) if tdd.input_gates else None
        except BaseException as exc:
            # As the task releases its partitions when it fails: a cancel has no cause.
            cause = None if self._canceled() else exc
            for partition in partitions:
                partition.release(cause)
            raise
        return TaskNetwork(tuple(partitions), tuple(made), gate)

    # --- 3. state and operators ---------------------------------------------------------

    def create_operators(
        self,
        payloads: Sequence[dict[str, Any]],
        restored: RestoredTaskState | None,
        writers: Sequence[RecordWriter],
    ) -> TaskOperators:
        """Each operator's state, restored from ``restored``, and the chain over them,
        writing to ``writers``. If it fails, the state backends it made are disposed."""
        key_type = self._input_key_type()
        backends: list[KeyedStateBackend] = []
        groups: dict[str, ScopedMetricGroup] = {}
        try:
            setups = tuple(
                self._operator_setup(
                    op,
                    payload,
                    restored=restored,
                    key_type=key_type,
                    backends=backends,
                    groups=groups,
                )
                for op, payload in zip(self._tdd.vertex.operators, payloads, strict=True)
            )
            chain = OperatorChain(setups, writers, key_type)
        except BaseException:
            dispose_backends(backends)
            raise
        return TaskOperators(chain, setups, tuple(backends), groups)

    def initialize_function_state(self, operators: TaskOperators, *, restored: bool) -> None:
        """Before the chain opens: user functions with state hooks initialize their state,
        fresh or restored (``weir.core.checkpointed_function`` has both forms)."""
        for setup in operators.setups:
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
                restored_checkpoint_id=self._tdd.restored_checkpoint_id,
                operator_name=setup.descriptor.name,
            )

    # --- 4. checkpointing ---------------------------------------------------------------

    def create_checkpointing(
        self, chain: OperatorChain, partitions: Sequence[ResultPartitionWriter]
    ) -> TaskCheckpointing | None:
        """Once ``chain`` is open (a source creates its reader there); None when the job
        does not checkpoint."""
        tdd = self._tdd
        settings = CheckpointingConfig.from_config(tdd.job_config)
        if not settings.enabled:
            return None
        coordinator = SubtaskCheckpointCoordinator(
            attempt_id=tdd.execution_attempt_id,
            subtask_index=tdd.subtask_index,
            storage=create_checkpoint_storage(tdd.job_config, tdd.job_id),
            chain=chain,
            partitions=list(partitions),
            acknowledge=self._services.acknowledge_checkpoint,
            decline=self._services.decline_checkpoint,
            compress=settings.snapshot_compression,
            has_inputs=bool(tdd.input_gates),
        )
        exactly_once = settings.mode is CheckpointingMode.EXACTLY_ONCE
        unaligned = exactly_once and settings.unaligned
        handler: CheckpointBarrierHandler | None = None
        if tdd.input_gates:
            channels = [len(g.channels) for g in tdd.input_gates]
            if unaligned:
                handler = UnalignedBarrierHandler(channels)
            elif exactly_once:
                handler = AlignedBarrierHandler(channels)
            else:
                handler = AtLeastOnceBarrierHandler(channels)
        return TaskCheckpointing(coordinator, handler, unaligned, settings.final_checkpoints)

    # --- helpers ------------------------------------------------------------------------

    def _checkpoint_storage_shares(self) -> bool:
        """The job's checkpoint storage keeps shared files (incremental checkpoints)."""
        job_config = self._tdd.job_config
        directory = config.get_with_deprecated_keys(job_config, config.CHECKPOINTING_DIR)
        kind = config.get(job_config, config.CHECKPOINTING_STORAGE)
        return kind == "filesystem" or (not kind and bool(directory))

    def _input_key_type(self) -> str:
        """The declared key type of the keyed input edges (their senders route by it)."""
        for gate in self._tdd.input_gates:
            if gate.edge.partitioner is PartitionerKind.KEY_GROUP and gate.edge.partitioner_payload:
                payload = load_user_code(gate.edge.partitioner_payload)
                return str(payload.get("key_type", "pickled"))
        return "pickled"

    def _operator_setup(
        self,
        descriptor: OperatorDescriptor,
        payload: dict[str, Any],
        *,
        restored: RestoredTaskState | None,
        key_type: str,
        backends: list[KeyedStateBackend],
        groups: dict[str, ScopedMetricGroup],
    ) -> OperatorSetup:
        """One operator's state and context; its keyed backend goes to ``backends`` and
        its metric group to ``groups`` as soon as they exist."""
        tdd = self._tdd
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
                key_hasher=PyFlinkKeyHasher(key_type),
                clock_ms=self._clock_ms,
                shared_state=self._checkpoint_storage_shares(),
            )
            backends.append(backend)
            if restored is not None:
                conform_key = next(
                    (getattr(s, "conform_key", None) for s in payload["key_selectors"] if s),
                    None,
                )
                keyed, native, legacy = restored.keyed_state(
                    str(descriptor.operator_id),
                    backend.key_hasher,
                    backend.key_group_range,
                    f"operator {descriptor.uid or descriptor.operator_id} ({descriptor.name})",
                    conform_key,
                )
                root = rocksdb_root(tdd.job_config)
                # Written before key placements were recorded: read whole, keys regrouped.
                keyed.extend(
                    regroup(
                        to_canonical(h, backend, root),
                        backend.key_hasher,
                        backend.key_group_range,
                        conform_key,
                    )
                    for h in legacy
                )
                if keyed:
                    backend.restore(keyed)
                if native:
                    restore_native(backend, native, root)
        # Operator state stays on the heap with either keyed state backend, as Flink's
        # DefaultOperatorStateBackend does beside RocksDB.
        operator_state = DefaultOperatorStateBackend()
        if restored is not None:
            operator_state.restore(restored.operator_state(str(descriptor.operator_id)))
        group = self._operator_metric_group(descriptor)
        groups[str(descriptor.operator_id)] = group
        context = StreamingRuntimeContext(
            task_name=vertex.name,
            task_name_with_subtasks=tdd.task_name,
            number_of_parallel_subtasks=vertex.parallelism,
            max_number_of_parallel_subtasks=vertex.max_parallelism,
            index_of_this_subtask=tdd.subtask_index,
            attempt_number=tdd.attempt_number,
            job_parameters=tdd.job_parameters,
            keyed_state_backend=backend,
            metric_group=group,
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
                None if restored is None else restored.source_state(str(descriptor.operator_id))
            ),
            restored_checkpoint_id=tdd.restored_checkpoint_id,
            operator_state_backend=operator_state,
            post_mail=self._post_mail,
            canceled=self._canceled,
        )

    def _queryable_state_registrar(
        self, descriptor: OperatorDescriptor, backend: KeyedStateBackend | None
    ) -> Callable[[str, Callable[[], Any]], None] | None:
        register = self._services.register_kv_state
        if register is None or backend is None:
            return None
        operator_id, put_mail = str(descriptor.operator_id), self._post_mail
        return lambda name, read: register(operator_id, name, backend, read, put_mail)

    def _operator_metric_group(self, descriptor: OperatorDescriptor) -> ScopedMetricGroup:
        """The group a function's ``get_metrics_group()`` returns (scope
        taskmanager.job.task.operator); without a task group, one reported nowhere."""
        task_group = self._services.metric_group
        if task_group is None:
            task_group = ScopedMetricGroup(MetricRegistry(), ("taskmanager", "job", "task"), {})
        return task_group.child(
            "operator",
            {"operator_id": str(descriptor.operator_id), "operator_name": descriptor.name},
        )


def dispose_backends(backends: Sequence[KeyedStateBackend]) -> None:
    """Dispose state backends, each whatever the others do."""
    for backend in backends:
        try:
            backend.dispose()
        except Exception as exc:
            # A database left on disk goes with the job's working directory; the
            # task's own outcome matters more than this cleanup.
            logger.warning("disposing a state backend failed: %s", exc, exc_info=True)
