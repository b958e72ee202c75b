"""Task: one parallel subtask of a JobVertex, run by one thread in a mailbox loop, and
its lifecycle (Flink's Task and the lifecycle half of its StreamTask).

The task thread does everything that touches operator state: it reads input (a
source's reader or the input gate), pushes each batch through the operator chain,
runs the mailbox's control actions between batches, and flushes partly filled
buffers when the buffer timeout is due. Other threads talk to it only through
``cancel()`` and the mailbox. Its parts, each in its own module: the setup of its
chain, state and checkpointing (``task_setup``), the input processor of a task with
inputs (``stream_input_processor``) and the loop of a source (``source_loop``).

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
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from weir.core import config
from weir.core.checkpoint import (
    CheckpointType,
)
from weir.core.deployment import ExecutionState, TaskDeploymentDescriptor
from weir.core.exception_history import CLEANUP_FAILURE_MARKER
from weir.core.ids import ExecutionAttemptId
from weir.core.metrics import ScopedMetricGroup
from weir.core.throwable_classifier import ThrowableType, throwable_type
from weir.taskmanager.checkpointing.barrier_handler import (
    CheckpointBarrierHandler,
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
from weir.taskmanager.operators.base import MAX_WATERMARK, MIN_WATERMARK
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.operators.source import (
    SourceOperator,
)
from weir.taskmanager.operators.timers import ProcessingTimeService
from weir.taskmanager.output_flusher import OutputFlusher
from weir.taskmanager.source_loop import SourceLoop
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.stream_input_processor import StreamInputProcessor
from weir.taskmanager.task_errors import TaskCanceledError
from weir.taskmanager.task_events import (
    CheckpointBarrier,
    Watermark,
    serialize_event,
)
from weir.taskmanager.task_setup import TaskSetup
from weir.taskmanager.task_stdout import task_stdout
from weir.taskmanager.watermark_valve import StatusWatermarkValve

logger = logging.getLogger(__name__)

# While a finished task waits for its final checkpoint it sleeps on the mailbox; a
# trigger, notification or cancel wakes it at once, so this bound only limits how long
# a wake-up that was missed could go unnoticed.
_FINAL_CHECKPOINT_WAIT_S = 1.0

_DATA = BufferKind.DATA
_END = BufferKind.END_OF_PARTITION


RegisterKvState = Callable[
    [str, str, KeyedStateBackend, Callable[[], Any], Callable[[Callable[[], None]], None]], None
]


class ReportState(Protocol):
    def __call__(
        self,
        attempt_id: ExecutionAttemptId,
        state: ExecutionState,
        cause: str | None,
        throwable_type: ThrowableType,
        /,
    ) -> None: ...


@dataclass(frozen=True)
class TaskServices:
    network: NetworkEnvironment
    report_state: ReportState
    """Called from the task thread on every transition; the string is the formatted
    failure (with the user's original traceback), the type whether a restart can cure it
    (``weir.core.throwable_classifier``; RECOVERABLE_ERROR but for a failure)."""
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
    """Entered on the task thread around its whole run: what the TaskManager sets up for
    the user code of this task's job there (its working directory, exit monitoring)."""
    metric_group: ScopedMetricGroup | None = None
    """The task's metric group (scope taskmanager.job.task); None: metrics go nowhere."""
    register_kv_state: RegisterKvState | None = None
    """``(operator_id, name, backend, read, put_mail)`` from the task thread when an
    operator creates a queryable state (in ``open``); may block on one RPC. None: the
    TaskManager serves no queryable state."""


class Task(TaskSetup, StreamInputProcessor, SourceLoop):
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
        channels have ended (an aligned one)."""
        self._read_ahead: deque[tuple[int, int, BufferKind, bytes]] = deque()
        """Input read to its end ahead of processing (an unaligned checkpoint triggered
        after every producer finished), processed before the gate is polled again."""
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
        producers have all finished. Taken between two batches on the task thread; by a
        task with inputs still open, at once when unaligned (what is still in flight on
        them is channel state), else once they have all ended. Savepoints are always
        aligned, as in Flink, and go to ``target_location``, which their barrier carries
        downstream.
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
                # Triggered here because every producer finished (FLIP-147), with their
                # last records still on the way.
                self._trigger_with_open_channels(barrier)
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

    def _transition(
        self,
        state: ExecutionState,
        cause: str | None = None,
        failure_type: ThrowableType = ThrowableType.RECOVERABLE_ERROR,
    ) -> None:
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
            self._services.report_state(self.tdd.execution_attempt_id, state, cause, failure_type)
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
            text += CLEANUP_FAILURE_MARKER + "".join(traceback.format_exception(cleanup_error))
        self._transition(ExecutionState.FAILED, text, throwable_type(exc))

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
