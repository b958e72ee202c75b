"""Task: one parallel subtask of a JobVertex, run by one thread in a mailbox loop, and
its lifecycle (Flink's Task and the lifecycle half of its StreamTask).

The task thread does everything that touches operator state: it reads input (a
source's reader or the input gate), pushes each batch through the operator chain,
runs the mailbox's control actions between batches, and flushes partly filled
buffers when the buffer timeout is due. Other threads talk to it only through
``cancel()`` and the mailbox.

The task composes its parts, each an object of its own module, constructed with what
it uses (as Flink's StreamTask has an OperatorChain, an input processor and a
SubtaskCheckpointCoordinator):

- ``TaskSetup`` (``task_setup``) builds, stage by stage, the network (partitions,
  writers, gate), the operators with their state (the chain) and the checkpointing (the
  subtask's checkpoint coordinator and barrier handler); the task holds what each stage
  returns, and releases it when it ends;
- ``StreamInputProcessor`` (``stream_input_processor``) is the loop of a task with
  inputs: the gate, the watermark valves, the barrier handling and the replay of
  in-flight input;
- ``SourceLoop`` (``source_loop``) is the loop of a source.

The two loops call back into the task through three of its steps, handed to their
constructors: serving the mailbox between two batches, checking for a cancel, and
ending the input.

Lifecycle (reported through ``TaskServices.report_state`` from the task thread)::

    DEPLOYING -> INITIALIZING -> RUNNING -> FINISHED
                      |             |----> FAILED    (any exception; traceback kept)
                      +-------------+----> CANCELED  (cancel(), even while blocked)
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable

from weir.core import config
from weir.core.checkpoint import CheckpointType
from weir.core.deployment import ExecutionState, TaskDeploymentDescriptor
from weir.core.exception_history import CLEANUP_FAILURE_MARKER
from weir.core.metrics import ScopedMetricGroup
from weir.core.throwable_classifier import ThrowableType, throwable_type
from weir.taskmanager.checkpointing.subtask_checkpoint import (
    RestoredTaskState,
    SubtaskCheckpointCoordinator,
)
from weir.taskmanager.mailbox import Mailbox
from weir.taskmanager.network.api import (
    BufferKind,
    InputGate,
    PartitionClosedError,
    ResultPartitionWriter,
)
from weir.taskmanager.operators.base import MAX_WATERMARK, MIN_WATERMARK
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.operators.source import SourceOperator
from weir.taskmanager.operators.timers import ProcessingTimeService
from weir.taskmanager.output_flusher import OutputFlusher
from weir.taskmanager.record_writer import BufferTimeout
from weir.taskmanager.source_loop import SourceLoop
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.stream_input_processor import StreamInputProcessor
from weir.taskmanager.task_canceler import withdraw_interrupt
from weir.taskmanager.task_errors import TaskCanceledError
from weir.taskmanager.task_events import CheckpointBarrier, Watermark, serialize_event
from weir.taskmanager.task_metrics import register_operator_metrics, register_task_metrics
from weir.taskmanager.task_services import TaskServices
from weir.taskmanager.task_setup import TaskNetwork, TaskSetup, dispose_backends
from weir.taskmanager.task_stdout import task_stdout

__all__ = ["Task", "TaskCanceledError", "TaskServices"]

logger = logging.getLogger(__name__)

# While a finished task waits for its final checkpoint it sleeps on the mailbox; a
# trigger, notification or cancel wakes it at once, so this bound only limits how long
# a wake-up that was missed could go unnoticed.
_FINAL_CHECKPOINT_WAIT_S = 1.0

_END = BufferKind.END_OF_PARTITION


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
        self._interruptible = False
        self.interrupt_lock = threading.Lock()
        """Held by the watchdog that interrupts a cancelled task (``task_canceler``) and
        by the task as it stops being interruptible."""
        self.mailbox = Mailbox()
        self._processing_timers = ProcessingTimeService(
            clock_ms, self.mailbox.put, name=tdd.task_name
        )
        self._thread = threading.Thread(target=self._run, name=tdd.task_name, daemon=True)
        cfg = tdd.job_config
        timeout_ms = config.get(cfg, config.BUFFER_TIMEOUT)
        if not config.get(cfg, config.BUFFER_TIMEOUT_ENABLED):
            timeout_ms = -1
        self._timeout_ms = timeout_ms
        # The most records pushed through the chain as one batch (PyFlink's bundle size):
        # a source polls this many, a larger network buffer is processed in parts. 1000 by
        # default, about one network buffer of small records, so a batch amortises the
        # per-batch costs while a mailbox action waits at most one batch.
        self._bundle_size = config.get(cfg, config.PYTHON_BUNDLE_SIZE)
        # The parts, set on the task thread as ``_initialize`` builds them; cancel() reads
        # the partitions, the gate and the source under the lock.
        self._partitions: tuple[ResultPartitionWriter, ...] = ()
        self._gate: InputGate | None = None
        self._source: SourceOperator | None = None
        self._restored: RestoredTaskState | None = None
        self._chain: OperatorChain | None = None
        self._backends: tuple[KeyedStateBackend, ...] = ()
        self._buffer_timeout = BufferTimeout(-1, clock)
        """Until the chain exists, one that is never due."""
        self._flusher = OutputFlusher((), None, tdd.task_name)
        self._checkpointing: SubtaskCheckpointCoordinator | None = None
        self._unaligned = False
        """EXACTLY_ONCE with unaligned checkpoints: barriers overtake in-flight data."""
        self._final_checkpoint = False
        """FLIP-147: at the end of input the task waits for a checkpoint before it ends."""
        self._input: StreamInputProcessor | None = None
        """The loop of a task with inputs."""
        self._source_loop: SourceLoop | None = None
        """The loop of a source."""
        self._input_ended = False

    # --- what its metrics read (weir.taskmanager.task_metrics), from any thread ----------

    @property
    def input_gate(self) -> InputGate | None:
        return self._gate

    @property
    def result_partitions(self) -> tuple[ResultPartitionWriter, ...]:
        return self._partitions

    @property
    def chain(self) -> OperatorChain | None:
        return self._chain

    @property
    def metric_group(self) -> ScopedMetricGroup | None:
        return self._services.metric_group

    @property
    def records_in(self) -> int:
        """Records read from the input gate (numRecordsIn)."""
        return 0 if self._input is None else self._input.records_in

    @property
    def bytes_in(self) -> int:
        """Bytes read from the input gate (numBytesIn)."""
        return 0 if self._input is None else self._input.bytes_in

    @property
    def idle_ns(self) -> int:
        """Time a source waited for data (a task with inputs: its gate's stats)."""
        return 0 if self._source_loop is None else self._source_loop.idle_ns

    @property
    def back_pressured_ns(self) -> int:
        """Time a source waited for room in its outputs (unaligned checkpoints)."""
        return 0 if self._source_loop is None else self._source_loop.back_pressured_ns

    def input_watermark(self) -> int:
        """The lowest watermark over the inputs of the head (MIN_WATERMARK: none yet)."""
        if self._input is not None:
            return self._input.input_watermark()
        head = self._chain.head if self._chain is not None else None
        return getattr(head, "current_watermark", MIN_WATERMARK)

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
            checkpointing = self._checkpointing
            if checkpointing is None or self._state is not ExecutionState.RUNNING:
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
            if self._input is not None:
                # Triggered here because every producer finished (FLIP-147): the input
                # processor knows what is still on the way.
                self._input.trigger_checkpoint(barrier)
                return
            checkpointing.checkpoint(barrier)

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
        if self._input is not None:
            self._input.abort_checkpoint(checkpoint_id)
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
            # The thread ends the task itself from here: no interrupt is needed, and one
            # could land in its cleanup (or in a callback the garbage collector runs).
            self._stop_interrupts()
            raise TaskCanceledError

    def _stop_interrupts(self) -> None:
        """From here on no interrupt of ``task_canceler`` reaches the task's thread (it
        ends the task itself); one raised but not yet seen is withdrawn. Task thread."""
        with self.interrupt_lock:
            self._interruptible = False
            withdraw_interrupt(self._thread)

    def _run(self) -> None:
        with task_stdout(self._services.print_target), self._services.task_thread():
            self._run_task()

    def _run_task(self) -> None:
        try:
            self._check_canceled()
            self._transition(ExecutionState.INITIALIZING)
            self._interruptible = True
            if self.tdd.finished_on_restore:
                # Partitions and gate only: a task finished on restore runs no operator.
                self._adopt_network(self._setup().create_network(writers=False))
                self._transition(ExecutionState.RUNNING)
                self._run_finished_on_restore()
                self._close_finished()
                return
            self._initialize()
            self._check_canceled()
            self._transition(ExecutionState.RUNNING)
            self._replay_channel_state()
            self._flusher.start()
            if self._source_loop is not None:
                self._source_loop.run()
                self._end_of_input()
            elif self._input is not None:
                self._input.run()
            else:
                self._end_of_input()
            self._await_final_checkpoint()
            self._check_canceled()
            self._stop_interrupts()
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

    def _setup(self) -> TaskSetup:
        return TaskSetup(
            self.tdd,
            self._services,
            processing_timers=self._processing_timers,
            post_mail=self.mailbox.put,
            canceled=lambda: self._cancel_requested,
            clock_ms=self._clock_ms,
        )

    def _adopt_network(self, network: TaskNetwork) -> None:
        with self._lock:
            self._partitions = network.partitions
            self._gate = network.gate
        if network.gate is not None:
            self.mailbox.set_waker(network.gate.wakeup)

    def _initialize(self) -> None:
        """Build the parts (``TaskSetup``, stage by stage), open the chain, and compose
        the loop that runs it: the input processor of a task with inputs, or the loop of
        a source. Each part is the task's as soon as a stage returns it, so that a
        failure or a cancel later on releases it."""
        tdd = self.tdd
        setup = self._setup()
        payloads = setup.load_user_code()
        restored = self._restored = setup.restore_state()
        network = setup.create_network()
        self._adopt_network(network)
        operators = setup.create_operators(payloads, restored, network.writers)
        chain = self._chain = operators.chain
        self._backends = operators.backends
        metric_group = self._services.metric_group
        if metric_group is not None:
            register_task_metrics(metric_group, self)
        buffer_timeout = self._buffer_timeout = BufferTimeout(self._timeout_ms, self._clock)
        flusher = self._flusher = OutputFlusher(network.writers, buffer_timeout, tdd.task_name)
        setup.initialize_function_state(operators, restored=restored is not None)
        chain.open()
        if metric_group is not None:
            register_operator_metrics(operators.operator_groups, chain, self.input_watermark)
        checkpointing = setup.create_checkpointing(chain, network.partitions)
        if checkpointing is not None:
            self._checkpointing = checkpointing.coordinator
            self._unaligned = checkpointing.unaligned
            self._final_checkpoint = checkpointing.final_checkpoint
        if network.gate is not None:
            self._input = StreamInputProcessor(
                network.gate,
                tdd.input_gates,
                chain,
                checkpointing=self._checkpointing,
                barrier_handler=None if checkpointing is None else checkpointing.barrier_handler,
                flusher=flusher,
                buffer_timeout=buffer_timeout,
                bundle_size=self._bundle_size,
                serve_mailbox=self._serve_mailbox,
                check_canceled=self._check_canceled,
                end_of_input=self._end_of_input,
                task_name=tdd.task_name,
            )
        head = chain.head
        if isinstance(head, SourceOperator):
            self._source_loop = SourceLoop(
                head,
                chain,
                mailbox=self.mailbox,
                flusher=flusher,
                buffer_timeout=buffer_timeout,
                bundle_size=self._bundle_size,
                back_pressure_from=network.partitions if self._unaligned else (),
                job_config=tdd.job_config,
                serve_mailbox=self._serve_mailbox,
                serve_actions=self._serve_actions,
                canceled=lambda: self._cancel_requested,
            )
            with self._lock:
                self._source = head
            if self._cancel_requested:  # cancel() ran before the source was known
                head.cancel_function()

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
        if self._input is not None:
            self._input.replay(inputs)
        chain.flush()

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
        self._stop_interrupts()
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
        dispose_backends(self._backends)
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
