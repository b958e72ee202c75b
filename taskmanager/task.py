"""Task: one parallel subtask of a JobVertex, run by one thread in a mailbox loop.

The task thread does everything that touches operator state: it reads input (a
source's reader or the input gate), pushes each batch through the operator chain,
runs the mailbox's control actions between batches, and flushes partly filled
buffers when the buffer timeout is due. Other threads talk to it only through
``cancel()`` and the mailbox.

Lifecycle (reported through ``TaskServices.report_state`` from the task thread)::

    DEPLOYING -> INITIALIZING -> RUNNING -> FINISHED
                      |             |----> FAILED    (any exception; traceback kept)
                      +-------------+----> CANCELED  (cancel(), even while blocked)
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from weir.core import config
from weir.core.checkpoint import (
    CheckpointingConfig,
    CheckpointingMode,
    CheckpointType,
    create_checkpoint_storage,
)
from weir.core.deployment import ExecutionState, TaskDeploymentDescriptor
from weir.core.errors import UserCodeError
from weir.core.ids import ExecutionAttemptId
from weir.core.job_graph import OperatorDescriptor, PartitionerKind
from weir.core.key_groups import PyFlinkKeyHasher, key_group_range_for_operator
from weir.core.metrics import MetricRegistry, ScopedMetricGroup
from weir.core.serializers import deserialize_records
from weir.taskmanager.checkpointing.barrier_handler import (
    AbortCheckpoint,
    Action,
    AlignedBarrierHandler,
    AtLeastOnceBarrierHandler,
    BlockChannel,
    ChannelStateComplete,
    CheckpointBarrierHandler,
    TriggerSnapshot,
    UnalignedBarrierHandler,
    UnblockAll,
)
from weir.taskmanager.checkpointing.subtask_checkpoint import (
    Acknowledge,
    Decline,
    RestoredTaskState,
    SubtaskCheckpointCoordinator,
)
from weir.taskmanager.mailbox import Mailbox
from weir.taskmanager.network.api import (
    BufferKind,
    InputGate,
    NetworkEnvironment,
    PartitionClosedError,
    ResultPartitionWriter,
)
from weir.taskmanager.operators.base import MAX_WATERMARK, MIN_WATERMARK, OperatorSetup
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.operators.function_state import initialize_function_state
from weir.taskmanager.operators.source import (
    SourceCanceledError,
    SourceFunctionContext,
    SourceOperator,
    source_function_batching,
)
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
from weir.taskmanager.task_events import (
    CheckpointBarrier,
    EndOfData,
    Watermark,
    WatermarkStatus,
    deserialize_event,
    serialize_event,
)
from weir.taskmanager.task_metrics import register_operator_metrics, register_task_metrics
from weir.taskmanager.task_stdout import task_stdout
from weir.taskmanager.user_code import load_user_code
from weir.taskmanager.watermark_valve import StatusWatermarkValve

logger = logging.getLogger(__name__)

# How long an idle source (``poll_batch`` returned []) waits before polling again; a
# mailbox action or cancel ends the wait early. Short, since readers must not block.
_IDLE_SOURCE_WAIT_S = 0.005
# While a finished task waits for its final checkpoint it sleeps on the mailbox; a
# trigger, notification or cancel wakes it at once, so this bound only limits how long
# a wake-up that was missed could go unnoticed.
_FINAL_CHECKPOINT_WAIT_S = 1.0

_DATA = BufferKind.DATA
_END = BufferKind.END_OF_PARTITION


RegisterKvState = Callable[
    [str, str, KeyedStateBackend, Callable[[], Any], Callable[[Callable[[], None]], None]], None
]


@dataclass(frozen=True)
class TaskServices:
    network: NetworkEnvironment
    report_state: Callable[[ExecutionAttemptId, ExecutionState, str | None], None]
    """Called from the task thread on every transition; the string is the formatted
    failure (with the user's original traceback)."""
    collect: Callable[[str, int, bytes, bool, int], None]
    """``(operator_id, subtask_index, serialized batch, end_of_data, checkpoint epoch)``;
    may block."""
    print_target: str | None = None
    """Path ``print()`` appends to (line-buffered); ``None`` = ``sys.stdout``."""
    acknowledge_checkpoint: Acknowledge = lambda *_: None
    """Called from the task's checkpoint writer thread once its state is written."""
    decline_checkpoint: Decline = lambda *_: None
    """Called when the task cannot take a checkpoint."""
    end_of_data: Callable[[ExecutionAttemptId], None] = lambda _: None
    """Called from the task thread when the task reached the end of its input and waits
    for its final checkpoint; must not block."""
    task_thread: Callable[[], AbstractContextManager[object]] = nullcontext
    metric_group: ScopedMetricGroup | None = None
    """The task's metric group (scope taskmanager.job.task); None: metrics go nowhere."""
    register_kv_state: RegisterKvState | None = None
    """``(operator_id, name, backend, read, put_mail)`` from the task thread when an
    operator creates a queryable state (in ``open``); may block on one RPC. None: the
    TaskManager serves no queryable state."""
    """Entered on the task thread around its whole run: what the TaskManager sets up for
    the user code of this task's job there (its working directory, exit monitoring)."""


class TaskCanceledError(Exception):
    """Unwinds the task thread after ``cancel()``."""


class PayloadUnpicklingError(UserCodeError):
    """An operator's payload could not be unpickled in the TaskManager."""


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
        raise PayloadUnpicklingError(msg) from exc
    if not isinstance(payload, dict):
        msg = f"operator {descriptor.name!r}: its payload is a {type(payload).__name__}, not a dict"
        raise PayloadUnpicklingError(msg)
    return payload


class Task:
    def __init__(
        self,
        tdd: TaskDeploymentDescriptor,
        services: TaskServices,
        *,
        clock: Callable[[], float] = time.monotonic,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        """``clock`` drives the buffer timeout (seconds, monotonic) and ``clock_ms`` is the
        processing time user code sees; both are injectable for tests."""
        self.tdd = tdd
        self._services = services
        self._clock = clock
        self._clock_ms = clock_ms
        self._state = ExecutionState.DEPLOYING
        self._failure_cause: str | None = None
        self._lock = threading.Lock()
        self._cancel_requested = False
        self.mailbox = Mailbox()
        self._gate: InputGate | None = None
        self._partitions: list[ResultPartitionWriter] = []
        self._chain: OperatorChain | None = None
        self._source: SourceOperator | None = None
        self._checkpointing: SubtaskCheckpointCoordinator | None = None
        self._barrier_handler: CheckpointBarrierHandler | None = None
        self._restored: RestoredTaskState | None = None
        self._backends: list[KeyedStateBackend] = []
        self._unaligned = False
        """EXACTLY_ONCE with unaligned checkpoints: barriers overtake in-flight data."""
        self._final_checkpoint = False
        """FLIP-147: at the end of input the task waits for a checkpoint before it ends."""
        self._input_ended = False
        self._open_channels = 0
        """Input channels that have not delivered END_OF_PARTITION yet."""
        self._data_ended: set[tuple[int, int]] = set()
        """(gate, channel) of the input channels after whose last record we are."""
        self._pending_trigger: CheckpointBarrier | None = None
        """A checkpoint triggered here because every producer finished, taken once their
        channels have ended."""
        self._alignment_started: float | None = None
        self._interruptible = False
        self._processing_timers = ProcessingTimeService(
            clock_ms, self.mailbox.put, name=tdd.task_name
        )
        # Per input gate: the valve of the head's input it feeds, and the index of the
        # gate's first channel within that valve.
        self._gate_valves: list[StatusWatermarkValve] = []
        self._gate_channel_base: list[int] = []
        self._thread = threading.Thread(target=self._run, name=tdd.task_name, daemon=True)
        cfg = tdd.job_config
        self._segment_size = config.get(cfg, config.SEGMENT_SIZE)
        self._compress = config.get(cfg, config.NETWORK_COMPRESSION) == "lz4"
        self._max_frame_size = config.get(cfg, config.MAX_FRAME_SIZE)
        timeout_ms = config.get(cfg, config.BUFFER_TIMEOUT)
        if not config.get(cfg, config.BUFFER_TIMEOUT_ENABLED):
            timeout_ms = -1
        self._timeout_ms = timeout_ms
        # The most records pushed through the chain as one batch (PyFlink's bundle size):
        # a source polls this many, a larger network buffer is processed in parts. 1000 by
        # default, about one network buffer of small records, so a batch amortises the
        # per-batch costs while a mailbox action waits at most one batch.
        self._bundle_size = config.get(cfg, config.PYTHON_BUNDLE_SIZE)
        self._flusher = OutputFlusher((), None, tdd.task_name)
        self._operator_groups: dict[str, ScopedMetricGroup] = {}
        """Each operator's metric group (scope taskmanager.job.task.operator), by id."""
        # What the task thread counts for its metrics (weir.taskmanager.task_metrics):
        # per buffer or per wait, never per record; read by other threads without a lock.
        self.records_in = 0
        self.bytes_in = 0
        self.idle_ns = 0
        """Time a source waited for data (a task with inputs: its gate's stats)."""
        self.back_pressured_ns = 0
        """Time a source waited for room in its outputs (unaligned checkpoints)."""

    # --- what its metrics read (weir.taskmanager.task_metrics), from any thread ----------

    @property
    def input_gate(self) -> InputGate | None:
        return self._gate

    @property
    def result_partitions(self) -> list[ResultPartitionWriter]:
        return self._partitions

    @property
    def chain(self) -> OperatorChain | None:
        return self._chain

    @property
    def metric_group(self) -> ScopedMetricGroup | None:
        return self._services.metric_group

    def input_watermark(self) -> int:
        """The lowest watermark over the inputs of the head (MIN_WATERMARK: none yet)."""
        valves = self._gate_valves
        if not valves:
            head = self._chain.head if self._chain is not None else None
            return getattr(head, "current_watermark", MIN_WATERMARK)
        return min(v.watermark for v in valves)

    # --- the API of the TaskExecutor ------------------------------------------------------

    @property
    def execution_state(self) -> ExecutionState:
        return self._state

    @property
    def failure_cause(self) -> str | None:
        return self._failure_cause

    @property
    def cancel_requested(self) -> bool:
        """``cancel()`` was called: blocking calls on the task thread may give up."""
        return self._cancel_requested

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    @property
    def interruptible(self) -> bool:
        """The task thread runs operators and user code, not its own ending: an
        interrupt (``task_canceler``) may be raised in it."""
        return self._interruptible

    def cancel(self) -> bool:
        """Thread-safe and idempotent: the task ends CANCELED promptly, also when it is
        blocked writing (its partitions are released) or reading (its gate is woken).
        Returns True for the call that cancelled it, False when it was cancelled or
        ended already. User code that loops on its own is interrupted by the
        TaskExecutor's watchdog (``task_canceler``)."""
        with self._lock:
            if self._cancel_requested or self._state.is_terminal:
                return False
            self._cancel_requested = True
            gate, partitions, source = self._gate, list(self._partitions), self._source
        logger.info("cancelling task %s", self.tdd.task_name)
        self.mailbox.wake()
        if source is not None:
            try:
                source.cancel_function()
            except Exception:  # the task ends CANCELED anyway; the user's cancel() is advisory
                logger.warning(
                    "cancel() of the source function of %s failed",
                    self.tdd.task_name,
                    exc_info=True,
                )
        if gate is not None:
            gate.wakeup()
        for partition in partitions:
            partition.release(None)
        return True

    def trigger_checkpoint(
        self,
        checkpoint_id: int,
        timestamp_ms: int,
        checkpoint_type: CheckpointType = CheckpointType.CHECKPOINT,
        target_location: str = "",
        *,
        drain: bool = False,
    ) -> None:
        """Checkpoint ``checkpoint_id`` at this task (any thread): a source, or a task whose
        producers have all finished. Taken between two batches on the task thread (by a
        task with inputs, once they have all ended). Savepoints are always aligned, as in
        Flink, and go to ``target_location``, which their barrier carries downstream.
        ``drain``: the task's sources end event time (MAX_WATERMARK) before the barrier."""

        def action() -> None:
            if self._checkpointing is None or self._state is not ExecutionState.RUNNING:
                # Ending: the JobMaster aborts the checkpoint when it sees the task end.
                logger.info(
                    "task %s: not taking checkpoint %d: not running",
                    self.tdd.task_name,
                    checkpoint_id,
                )
                return
            if drain and self._chain is not None:
                for op in self._chain.operators:
                    if isinstance(op, SourceOperator):
                        op.advance_to_end_of_event_time()
            unaligned = self._unaligned and checkpoint_type is CheckpointType.CHECKPOINT
            barrier = CheckpointBarrier(
                checkpoint_id, timestamp_ms, checkpoint_type.value, unaligned, target_location
            )
            if self._open_channels > 0:
                # Triggered here because every producer finished (FLIP-147): taken once
                # their last records are in, never ahead of them.
                self._pending_trigger = barrier
                return
            if self._gate is not None:
                # A task with inputs, all ended: nothing in flight, nothing to overtake.
                barrier = dataclasses.replace(barrier, unaligned=False)
            self._checkpointing.checkpoint(barrier)

        self.mailbox.put(action)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.mailbox.put(lambda: self._on_notification(checkpoint_id, complete=True))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.mailbox.put(lambda: self._on_notification(checkpoint_id, complete=False))

    def _on_notification(self, checkpoint_id: int, complete: bool) -> None:
        checkpointing = self._checkpointing
        if checkpointing is None:
            return
        if complete:
            checkpointing.notify_complete(checkpoint_id)
            return
        if self._barrier_handler is not None:
            self._perform(self._barrier_handler.on_checkpoint_aborted(checkpoint_id))
        checkpointing.notify_aborted(checkpoint_id)

    # --- the task thread -------------------------------------------------------------------

    def _transition(self, state: ExecutionState, cause: str | None = None) -> None:
        with self._lock:
            self._state = state
            self._failure_cause = cause
        logger.info(
            "task %s (attempt %s) switched to %s",
            self.tdd.task_name,
            self.tdd.execution_attempt_id,
            state.value,
        )
        try:
            self._services.report_state(self.tdd.execution_attempt_id, state, cause)
        except Exception:  # the state is kept locally; the TaskExecutor reconciles later
            logger.warning(
                "reporting %s of %s failed", state.value, self.tdd.task_name, exc_info=True
            )

    def _check_canceled(self) -> None:
        if self._cancel_requested:
            raise TaskCanceledError

    def _run(self) -> None:
        with task_stdout(self._services.print_target), self._services.task_thread():
            self._run_task()

    def _run_task(self) -> None:
        try:
            self._check_canceled()
            self._transition(ExecutionState.INITIALIZING)
            self._interruptible = True
            if self.tdd.finished_on_restore:
                self._initialize_network()
                self._transition(ExecutionState.RUNNING)
                self._run_finished_on_restore()
                self._close_finished()
                return
            self._initialize()
            self._check_canceled()
            self._transition(ExecutionState.RUNNING)
            self._replay_channel_state()
            self._flusher.start()
            if self._source is not None:
                self._run_source()
                self._end_of_input()
            else:
                self._run_inputs()
            self._await_final_checkpoint()
            self._check_canceled()
            self._interruptible = False
            chain = self._chain
            assert chain is not None
            chain.end_partitions()
            error = chain.close()
            if error is not None:
                raise error
            if self._gate is not None:
                self._gate.close()
            if self._checkpointing is not None:
                self._checkpointing.close()
            self.mailbox.close()
            self._transition(ExecutionState.FINISHED)
        except BaseException as exc:  # every way out must end in a terminal state
            self._fail_or_cancel(exc)

    def _end_of_input(self) -> None:
        """Every input is consumed: the operators finish (windows fire, sinks close what
        they write). With final checkpoints (FLIP-147) consumers learn that no record
        follows, and the task waits for its final checkpoint before it ends its
        partitions; otherwise they end at once."""
        if self._input_ended:
            return
        self._input_ended = True
        chain = self._chain
        assert chain is not None
        self._flusher.close()
        chain.finish_operators()
        self._processing_timers.close()
        if self._final_checkpoint:
            assert self._checkpointing is not None
            chain.emit_end_of_data()
            self._checkpointing.operators_finished()
            self._services.end_of_data(self.tdd.execution_attempt_id)

    def _await_final_checkpoint(self) -> None:
        """FLIP-147: serve checkpoints until one taken after the operators finished has
        completed, so that the sinks commit everything they wrote, and a restore never
        runs this task again. Nothing is committed outside a checkpoint meanwhile."""
        checkpointing = self._checkpointing
        if not self._final_checkpoint or checkpointing is None:
            return
        logger.info(
            "task %s reached the end of its input; waiting for its final checkpoint",
            self.tdd.task_name,
        )
        while not checkpointing.final_checkpoint_completed:
            self._serve_actions()
            if not checkpointing.final_checkpoint_completed:
                # Woken by the next action (a trigger, a notification, a cancel).
                self.mailbox.wait(_FINAL_CHECKPOINT_WAIT_S)

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

    def _run_finished_on_restore(self) -> None:
        """The restored checkpoint recorded this subtask as finished: end the outputs at
        once and wait for the inputs (their producers finished as well) to end.

        Its consumers get what it sent last before it finished: the end of event time
        (MAX_WATERMARK), then the end of its partitions. Without the watermark, a
        consumer with another input still running (a keyed stream connected with a
        finished broadcast stream) would keep this input's watermark at its start and
        never fire an event-time timer or window again."""
        logger.info("task %s was finished when its checkpoint was taken", self.tdd.task_name)
        end_of_event_time = serialize_event(Watermark(MAX_WATERMARK))
        for partition in self._partitions:
            partition.broadcast_event(end_of_event_time)
            partition.finish()
        gate = self._gate
        open_channels = sum(len(g.channels) for g in self.tdd.input_gates)
        while gate is not None and open_channels > 0:
            self._serve_actions()
            item = gate.poll(_FINAL_CHECKPOINT_WAIT_S)
            if item is not None and item[2] == _END:
                open_channels -= 1

    def _close_finished(self) -> None:
        if self._gate is not None:
            self._gate.close()
        self.mailbox.close()
        self._transition(ExecutionState.FINISHED)

    def _fail_or_cancel(self, exc: BaseException) -> None:
        self._interruptible = False
        canceled = self._cancel_requested
        cleanup_error = self._cleanup(None if canceled else exc)
        self.mailbox.close()
        if canceled:
            self._transition(ExecutionState.CANCELED)
            return
        if isinstance(exc, PartitionClosedError):
            logger.warning("a partition of %s was released under it", self.tdd.task_name)
        text = "".join(traceback.format_exception(exc))
        if cleanup_error is not None:
            text += "\nWhile cleaning up, another error occurred:\n" + "".join(
                traceback.format_exception(cleanup_error)
            )
        self._transition(ExecutionState.FAILED, text)

    def _cleanup(self, cause: BaseException | None) -> BaseException | None:
        """Close user functions, release partitions, close the gate. Returns the first
        error of a user ``close()``."""
        error = None
        self._flusher.close()
        self._processing_timers.close()
        if self._chain is not None:
            error = self._chain.close()
        for partition in self._partitions:
            partition.release(cause)
        if self._gate is not None:
            self._gate.close()
        if self._checkpointing is not None:
            self._checkpointing.close()
        for backend in self._backends:
            try:
                backend.dispose()
            except Exception as exc:
                # A database left on disk goes with the job's working directory; the
                # task's own outcome matters more than this cleanup.
                logger.warning("disposing a state backend failed: %s", exc, exc_info=True)
        return error

    def _initialize(self) -> None:
        tdd = self.tdd
        vertex = tdd.vertex
        # Before the functions are unpickled: they may import what these bring. On the task
        # thread, whose current directory is the job's working directory.
        install_python_files(tdd.job_config)
        install_python_requirements(tdd.job_config)
        unpack_python_archives(tdd.job_config)
        export_python_executable(tdd.job_config)
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
            register_task_metrics(self._services.metric_group, self)
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

    def _perform(self, actions: list[Action]) -> None:
        """Carry out what the barrier handler decided, in order (task thread)."""
        gate = self._gate
        for action in actions:
            if isinstance(action, BlockChannel):
                if self._alignment_started is None:
                    self._alignment_started = time.monotonic()
                gate.block_channel(action.gate_index, action.channel_index)  # type: ignore[union-attr]
            elif isinstance(action, UnblockAll):
                gate.unblock_all()  # type: ignore[union-attr]
            elif isinstance(action, TriggerSnapshot):
                started = self._alignment_started
                self._alignment_started = None
                alignment_ms = 0 if started is None else int((time.monotonic() - started) * 1000)
                if self._checkpointing is not None:
                    self._checkpointing.checkpoint(action.barrier, alignment_ms)
            elif isinstance(action, ChannelStateComplete):
                if self._checkpointing is not None:
                    self._checkpointing.complete_channel_state(
                        action.checkpoint_id, action.channel_state
                    )
            elif isinstance(action, AbortCheckpoint):
                self._alignment_started = None
                if self._checkpointing is not None:
                    self._checkpointing.decline(action.checkpoint_id, action.reason.value)

    def _replay_channel_state(self) -> None:
        """Recovery from an unaligned checkpoint, before any new input: re-send the
        output that was in flight (the consumers restored from a state that had not
        seen it), then process the input that was in flight (this task's restored state
        has not seen it), per channel in its original order."""
        if self._restored is None:
            return
        inputs, outputs = self._restored.channel_state()
        if not inputs and not outputs:
            return
        logger.info(
            "task %s: replaying %d output and %d input buffers of its checkpoint",
            self.tdd.task_name,
            sum(map(len, outputs.values())),
            sum(map(len, inputs.values())),
        )
        for (p, sub), buffers in sorted(outputs.items()):
            for buffer in buffers:
                self._partitions[p].emit(sub, buffer)
        chain = self._chain
        assert chain is not None
        gates = self.tdd.input_gates
        for (g, _), buffers in sorted(inputs.items()):
            process = chain.input(gates[g].edge.input_index)
            for buffer in buffers:
                self._check_canceled()
                process(*deserialize_records(buffer))
        chain.flush()

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

    # --- mailbox loops ----------------------------------------------------------------------

    def _serve_actions(self) -> None:
        """Control actions and cancellation, without flushing."""
        mailbox = self.mailbox
        if mailbox.has_actions():
            mailbox.run_pending()
        if self._cancel_requested:
            raise TaskCanceledError

    def _serve_mailbox(self) -> None:
        """Between two batches: control actions, cancellation, a due buffer flush."""
        mailbox = self.mailbox
        if mailbox.has_actions():
            mailbox.run_pending()
        if self._cancel_requested:
            raise TaskCanceledError
        if self._buffer_timeout.due():
            self._chain.flush()  # type: ignore[union-attr]

    def _run_inputs(self) -> None:
        chain = self._chain
        gate = self._gate
        assert chain is not None
        tdd = self.tdd
        inputs = [chain.input(g.edge.input_index) for g in tdd.input_gates]
        if gate is None or self._open_channels == 0:
            self._end_of_input()
            return
        self._build_valves()
        timeout = self._buffer_timeout
        flush_after_batch = timeout.flush_after_batch
        serve = self._serve_mailbox
        poll = gate.poll
        flusher = self._flusher
        bundle_size = self._bundle_size
        # Unaligned checkpoints see every DATA buffer before it is processed (it may be
        # in-flight channel state); one check per buffer, not per record.
        capture = (
            self._barrier_handler.on_buffer
            if self._unaligned and self._barrier_handler is not None
            else None
        )
        while True:
            serve()
            item = poll(timeout.poll_timeout())
            if item is None:
                continue
            gate_index, channel, kind, payload = item
            if kind == _DATA:
                if capture is not None:
                    capture(gate_index, channel, payload)
                records, timestamps = deserialize_records(payload)
                # Counted per buffer, never per record (numRecordsIn, numBytesIn).
                self.records_in += len(records)
                self.bytes_in += len(payload)
                if len(records) > bundle_size:
                    self._process_in_bundles(inputs[gate_index], records, timestamps)
                else:
                    flusher.epoch += 1
                    try:
                        inputs[gate_index](records, timestamps)
                    finally:
                        flusher.epoch += 1
                if flush_after_batch:
                    chain.flush()
            elif kind == _END:
                if self._barrier_handler is not None:
                    self._perform(self._barrier_handler.on_end_of_partition(gate_index, channel))
                advanced = self._gate_valves[gate_index].channel_ended(
                    self._gate_channel_base[gate_index] + channel
                )
                if advanced is not None:
                    chain.input_watermark(tdd.input_gates[gate_index].edge.input_index)(advanced)
                self._channel_data_ended(gate_index, channel)
                self._open_channels -= 1
                if self._open_channels == 0:
                    trigger, self._pending_trigger = self._pending_trigger, None
                    if trigger is not None and self._checkpointing is not None:
                        # Every input has ended: nothing is in flight to overtake, so the
                        # checkpoint is taken aligned (no channel state to wait for).
                        aligned = dataclasses.replace(trigger, unaligned=False)
                        self._checkpointing.checkpoint(aligned)
                    return
            else:
                self._on_event(gate_index, channel, payload)

    def _process_in_bundles(self, process: Any, records: list[Any], timestamps: Any) -> None:
        """A buffer of more records than the bundle size, a bundle at a time, serving the
        mailbox in between (timers, periodic watermarks, a due flush)."""
        size = self._bundle_size
        flusher = self._flusher
        for start in range(0, len(records), size):
            if start:
                self._serve_mailbox()
            end = start + size
            flusher.epoch += 1
            try:
                process(records[start:end], None if timestamps is None else timestamps[start:end])
            finally:
                flusher.epoch += 1

    def _channel_data_ended(self, gate_index: int, channel: int) -> None:
        """No record follows on this channel (EndOfData, or END_OF_PARTITION); after the
        last channel, the input has ended."""
        ended = self._data_ended
        ended.add((gate_index, channel))
        if len(ended) == sum(len(g.channels) for g in self.tdd.input_gates):
            self._end_of_input()

    def _build_valves(self) -> None:
        """One watermark valve per input of the head operator, over the channels of
        every gate that feeds it (a union feeds one input from several gates)."""
        gates = self.tdd.input_gates
        sizes: dict[int, int] = {}
        for g in gates:
            index = g.edge.input_index
            self._gate_channel_base.append(sizes.get(index, 0))
            sizes[index] = sizes.get(index, 0) + len(g.channels)
        valves = {index: StatusWatermarkValve(n) for index, n in sizes.items()}
        self._gate_valves = [valves[g.edge.input_index] for g in gates]

    def _on_watermark_event(
        self, gate_index: int, channel: int, event: Watermark | WatermarkStatus
    ) -> None:
        chain = self._chain
        assert chain is not None
        valve = self._gate_valves[gate_index]
        flat = self._gate_channel_base[gate_index] + channel
        input_index = self.tdd.input_gates[gate_index].edge.input_index
        if isinstance(event, Watermark):
            advanced = valve.input_watermark(flat, event.timestamp)
            idle = None
        else:
            advanced, idle = valve.input_status(flat, event.idle)
        if advanced is not None:
            chain.input_watermark(input_index)(advanced)
        if idle is not None:
            chain.input_watermark_status(input_index)(idle)

    def _on_event(self, gate_index: int, channel: int, payload: bytes) -> None:
        event = deserialize_event(payload)
        if isinstance(event, Watermark | WatermarkStatus):
            self._on_watermark_event(gate_index, channel, event)
            return
        if isinstance(event, EndOfData):
            self._channel_data_ended(gate_index, channel)
            return
        if isinstance(event, CheckpointBarrier):
            handler = self._barrier_handler
            if handler is None:
                return
            overtaken: list[bytes] = []
            if event.unaligned and self._gate is not None:
                # Buffers received before the barrier that it jumped inside the gate.
                overtaken = self._gate.priority_event_overtaken(gate_index, channel)
            self._perform(handler.on_barrier(gate_index, channel, event, overtaken))
            return
        logger.debug(
            "task %s: %r on gate %d channel %d not handled yet",
            self.tdd.task_name,
            event,
            gate_index,
            channel,
        )

    def _run_source(self) -> None:
        source = self._source
        assert source is not None
        if source.source_function is not None:
            self._run_source_function(source)
            return
        reader = source.reader
        assert reader is not None
        chain = self._chain
        assert chain is not None
        timeout = self._buffer_timeout
        flush_after_batch = timeout.flush_after_batch
        serve = self._serve_mailbox
        poll_batch = reader.poll_batch
        output = source.emit
        n = self._bundle_size
        flusher = self._flusher
        # Unaligned checkpoints must not wait for a back-pressured source to get its
        # batch out: it reads only when its output has room, and serves the mailbox (a
        # checkpoint trigger) meanwhile, as Flink's StreamTask does. Aligned barriers
        # queue behind the data anyway, so that mode keeps the plain loop.
        # Nor does it flush a partly filled buffer then, which would block as well.
        partitions = self._partitions if self._unaligned else []
        while True:
            if partitions and not all(p.is_available() for p in partitions):
                self._serve_actions()
                started = time.perf_counter_ns()
                self.mailbox.wait(_IDLE_SOURCE_WAIT_S)
                self.back_pressured_ns += time.perf_counter_ns() - started
                continue
            serve()
            batch = poll_batch(n)
            if batch is None:
                return
            if batch:
                flusher.epoch += 1
                try:
                    output(batch, None)
                finally:
                    flusher.epoch += 1
                if flush_after_batch:
                    chain.flush()
            else:
                wait = timeout.poll_timeout()
                started = time.perf_counter_ns()
                self.mailbox.wait(
                    _IDLE_SOURCE_WAIT_S if wait is None else min(wait, _IDLE_SOURCE_WAIT_S)
                )
                self.idle_ns += time.perf_counter_ns() - started

    def _run_source_function(self, source: SourceOperator) -> None:
        chain = self._chain
        assert chain is not None
        flush_after_batch = self._buffer_timeout.flush_after_batch

        def serve() -> None:
            if self._cancel_requested:
                raise SourceCanceledError
            if flush_after_batch:
                chain.flush()
            self._serve_mailbox()

        emit = source.emit
        flusher = self._flusher

        def output(batch: list[Any], timestamps: list[int | None] | None) -> None:
            flusher.epoch += 1
            try:
                emit(batch, timestamps)
            finally:
                flusher.epoch += 1

        size, max_age_s = source_function_batching(self.tdd.job_config, self._bundle_size)
        ctx = SourceFunctionContext(
            output, size, chain.flush, serve, source.output, max_age_s=max_age_s
        )
        try:
            source.source_function.run(ctx)  # type: ignore[union-attr]
            ctx.close()
        except SourceCanceledError:
            raise TaskCanceledError from None
