"""The CheckpointCoordinatorDeActivator: starts and stops the CheckpointCoordinator's
periodic trigger as the job's tasks run and finish, and tells it of finished tasks and of
the end of their input (Flink's CheckpointCoordinatorDeActivator, driven here by the
tasks' states as well as the job's).

* Every task RUNNING: the periodic trigger starts.
* With checkpoints after tasks finish (FLIP-147, ``CheckpointingConfig.final_checkpoints``)
  a FINISHED task is reported, and the trigger starts once every task is RUNNING or
  FINISHED; without them a FINISHED task stops the trigger and aborts the checkpoints it
  would never acknowledge.
* Every task at the end of its input (``end_of_data``): its final checkpoint is triggered
  at once rather than at the next interval, so a bounded job ends as soon as its data does.
* A failover stops the trigger (``stop``).

Threading: called under the scheduler's lock, whose fields it reads (the graph) and whose
lock guards its own. It never calls the coordinator there: the coordinator calls the
scheduler's ``checkpoint_plan`` (which takes that lock) under its own lock. Each call goes,
in order, to a thread of its own; ``close`` waits for the calls queued.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from weir.core.deployment import ExecutionState
from weir.core.ids import ExecutionAttemptId
from weir.jobmanager.checkpoint import CheckpointCoordinator
from weir.jobmanager.checkpoint.checkpoint_plan import CHECKPOINTABLE
from weir.jobmanager.execution_graph import ExecutionGraph, ExecutionVertex

logger = logging.getLogger(__name__)


class CheckpointCoordinatorDeActivator:
    """The checkpoint side of the scheduler of job ``job_id``; ``coordinator`` is None
    while the job takes no checkpoints."""

    def __init__(self, job_id: str, *, final_checkpoints: bool) -> None:
        self._job_id = job_id
        self.coordinator: CheckpointCoordinator | None = None
        # FLIP-147: checkpoints go on after some tasks finished, and a finishing task
        # waits for its final checkpoint (CheckpointingConfig.final_checkpoints).
        self._final_checkpoints = final_checkpoints
        self._calls = ThreadPoolExecutor(1, thread_name_prefix=f"coordinator-calls-{job_id[:8]}")
        # Tasks of the current attempt that reached the end of their input.
        self._end_of_data: set[ExecutionAttemptId] = set()

    def task_changed(
        self, ev: ExecutionVertex, state: ExecutionState, graph: ExecutionGraph, running: bool
    ) -> None:
        """Under the lock: ``ev``, a task of ``graph`` (the current attempt), is now in
        ``state``, not FAILED (a failover follows that); ``running``: the job is RUNNING."""
        coordinator = self.coordinator
        if coordinator is not None and self._final_checkpoints:
            # Checkpoints go on while tasks finish: a finishing task waits for one.
            if state is ExecutionState.FINISHED:
                self._call(coordinator.task_finished, ev.current.attempt_id)
            if running and all(e.current.state in CHECKPOINTABLE for e in graph.all_executions()):
                self._call(coordinator.start_periodic_scheduler)
        elif state is ExecutionState.RUNNING and running:
            if coordinator is not None and all(
                e.current.state is ExecutionState.RUNNING for e in graph.all_executions()
            ):
                self._call(coordinator.start_periodic_scheduler)
        elif state is ExecutionState.FINISHED and coordinator is not None:
            # execution.checkpointing.checkpoints-after-tasks-finish is off: stop
            # triggering and drop the checkpoints a finished task would never ack.
            self._call(coordinator.stop_periodic_scheduler)
            self._call(coordinator.abort_pending, f"{ev.task_name} finished")

    def end_of_data(
        self,
        attempt_id: ExecutionAttemptId,
        graph: ExecutionGraph,
        is_finished: Callable[[ExecutionVertex], bool],
    ) -> None:
        """Under the lock, the job RUNNING with checkpoints: the task ``attempt_id`` of
        ``graph`` finished its operators and waits for its final checkpoint. Once every
        task has, or ``is_finished`` (exited, or finished on restore), that checkpoint is
        triggered."""
        coordinator = self.coordinator
        assert coordinator is not None
        self._end_of_data.add(attempt_id)
        if all(
            e.current.state is ExecutionState.FINISHED
            or e.current.attempt_id in self._end_of_data
            or is_finished(e)
            for e in graph.all_executions()
        ):
            logger.info("job %s: every task reached the end of its input", self._job_id)
            self._call(coordinator.trigger_checkpoint)

    def stop(self) -> None:
        """Under the lock: the job fails over; no checkpoint is triggered until its next
        attempt runs."""
        if self.coordinator is not None:
            self._call(self.coordinator.stop_periodic_scheduler)

    def new_attempt(self) -> None:
        """Under the lock: the next attempt is deployed; none of its tasks is at the end
        of its input yet."""
        self._end_of_data = set()

    def _call(self, method: Callable[..., object], *args: Any) -> None:
        """Call the checkpoint coordinator, in order, on a thread of its own: never under
        the scheduler's lock, since the coordinator calls ``checkpoint_plan`` (which takes
        it) under its own lock."""
        try:
            self._calls.submit(method, *args)
        except RuntimeError:  # closed: the job is over and the coordinator shut down
            logger.debug("job %s: coordinator call %s after close", self._job_id, method)

    def close(self) -> None:
        """Stop the thread that calls the coordinator once the calls queued have run."""
        self._calls.shutdown(wait=True)
