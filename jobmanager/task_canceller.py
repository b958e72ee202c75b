"""The TaskCanceller: ends the tasks of a job's attempt on their TaskExecutors, for a
restart or for the job's end (Flink's Execution.cancel, for every task of the attempt).

A task not deployed yet (CREATED, or SCHEDULED into a slot) ends CANCELED at once
(``end_undeployed``): no TaskManager has it. A deployed one that has not ended is marked
CANCELING and sent CancelTask (``cancel_targets`` lists them); its own report ends it.
A task on a TaskManager known to be lost, or whose CancelTask cannot be delivered, is
gone with its TaskManager: it is taken as cancelled at once. When the job ends, a
watchdog waits up to task.cancellation.timeout plus heartbeat.timeout for the reports,
then asks the scheduler to take the tasks still unconfirmed as cancelled.

Threading: it shares the scheduler's lock. ``cancel_all`` runs under it and sends from a
thread of its own; ``deliver`` runs on the caller's thread (a restart's), never under
the lock. The scheduler's ``update_task_state`` takes each task's end, and the
scheduler's slot allocator (``LostTaskManagers``) says which are lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from weir.core import config as cfg
from weir.core.deployment import ExecutionState
from weir.core.errors import RemoteTimeoutError, ServiceUnavailableError
from weir.jobmanager.execution_graph import ExecutionGraph
from weir.jobmanager.gateways import TASK_RPC_TIMEOUT_S, TaskExecutorGateways

logger = logging.getLogger(__name__)

# A cancelled job stays CANCELLING until every task has ended, as in Flink: a task whose
# user code ignores interrupts ends with its TaskManager at task.cancellation.timeout (the
# TaskManager's watchdog), which the ResourceManager notices within heartbeat.timeout. A
# task still unconfirmed after both, and this much more, lost its report on the way: it
# is taken as cancelled so the job ends.
_CANCEL_REPORT_GRACE_S = 10.0

CancelTarget = tuple[str, str]
"""A task to cancel: its execution attempt id and its TaskExecutor's rpc address."""


class LostTaskManagers(Protocol):
    """Which TaskManagers the job knows to be lost. Called under the scheduler's lock."""

    def lost_addresses(self) -> set[str]:
        """The rpc addresses of the TaskManagers known to be lost (a copy)."""
        ...

    def address_unreachable(self, address: str) -> None:
        """A call to ``address`` found no TaskExecutor there."""
        ...


def cancel_targets(graph: ExecutionGraph) -> list[CancelTarget]:
    """Under the lock: the tasks of ``graph`` deployed into a slot that have not ended."""
    return [
        (ev.current.attempt_id, ev.current.slot.rpc_address)
        for ev in graph.all_executions()
        if ev.current.slot is not None
        and not ev.current.state.is_terminal
        and ev.current.state is not ExecutionState.CREATED
    ]


def end_undeployed(graph: ExecutionGraph) -> None:
    """Under the lock, the job no longer RUNNING: a task not deployed yet (CREATED, or
    SCHEDULED into a slot) ends CANCELED at once, as Flink's Execution.cancel ends one
    that was never deployed: no TaskManager has it, so none would ever confirm its
    cancellation, and the deploying thread deploys nothing more once it sees the job
    is no longer RUNNING."""
    for ev in graph.all_executions():
        if ev.current.state in (ExecutionState.CREATED, ExecutionState.SCHEDULED):
            ev.current.transition(ExecutionState.CANCELED)


class TaskCanceller:
    """Cancels the tasks of the job ``job_id``.

    ``update_task_state(attempt_id, state, cause)`` is the scheduler's, for a task taken
    as cancelled; ``take_unconfirmed_as_cancelled()`` ends the tasks that never confirmed
    when the watchdog gives up; ``terminated`` is set once the job has ended (the
    watchdog stops)."""

    def __init__(
        self,
        job_id: str,
        config: dict[str, str],
        *,
        lock: threading.RLock,
        task_executors: TaskExecutorGateways,
        task_managers: LostTaskManagers,
        update_task_state: Callable[[str, ExecutionState, str | None], bool],
        take_unconfirmed_as_cancelled: Callable[[], None],
        terminated: threading.Event,
    ) -> None:
        self._job_id = job_id
        self._lock = lock
        self._task_executors = task_executors
        self._task_managers = task_managers
        self._update_task_state = update_task_state
        self._take_unconfirmed_as_cancelled = take_unconfirmed_as_cancelled
        self._terminated = terminated
        cancellation_timeout_ms = cfg.get(config, cfg.TASK_CANCELLATION_TIMEOUT)
        # None: task.cancellation.timeout 0, no watchdog: a stuck task holds the job
        # CANCELLING until its TaskManager is lost (Flink's behaviour).
        self._confirm_timeout_s: float | None = (
            (cancellation_timeout_ms + cfg.get(config, cfg.HEARTBEAT_TIMEOUT)) / 1000
            + _CANCEL_REPORT_GRACE_S
            if cancellation_timeout_ms > 0
            else None
        )
        self._deadline: float | None = None

    def cancel_all(self, graph: ExecutionGraph) -> None:
        """Under the lock: end the tasks of ``graph`` not deployed yet, mark every
        deployed task that has not ended CANCELING and ask it to cancel (from a helper
        thread: RPCs off the lock). The job's status waits for each deployed task's own
        report of its end."""
        end_undeployed(graph)
        targets = cancel_targets(graph)
        cancelled = {attempt for attempt, _ in targets}
        for ev in graph.all_executions():
            if ev.current.attempt_id in cancelled:
                ev.current.transition(ExecutionState.CANCELING)
        timeout_s = self._confirm_timeout_s
        self._deadline = None if timeout_s is None else time.monotonic() + timeout_s
        threading.Thread(
            target=self._send_cancels,
            args=(targets,),
            daemon=True,
            name=f"cancel-{self._job_id[:8]}",
        ).start()

    def _send_cancels(self, targets: list[CancelTarget]) -> None:
        self.deliver(targets)
        self._await_cancels()

    def deliver(self, targets: list[CancelTarget]) -> None:
        """CancelTask to every target at once. A task on a TaskManager known to be lost is
        gone with it: taken as cancelled without a call that could only time out."""
        with self._lock:
            lost = self._task_managers.lost_addresses()
        for attempt_id, address in targets:
            if address in lost:
                self._update_task_state(attempt_id, ExecutionState.CANCELED, None)
        reachable = [(a, address) for a, address in targets if address not in lost]
        for outcome in self._task_executors.cancel_tasks(reachable, TASK_RPC_TIMEOUT_S):
            if outcome.error is None:
                continue
            # Its TaskManager is gone: the task is gone with it.
            logger.info(
                "cancel of %s not delivered (%s); taking it as cancelled",
                outcome.attempt_id,
                outcome.error,
            )
            if isinstance(outcome.error, (ServiceUnavailableError, RemoteTimeoutError)):
                with self._lock:
                    self._task_managers.address_unreachable(outcome.address)
            self._update_task_state(outcome.attempt_id, ExecutionState.CANCELED, None)

    def _await_cancels(self) -> None:
        deadline = self._deadline
        if deadline is None:
            return  # no watchdog: the tasks' reports, or their TaskManagers' loss, end it
        while not self._terminated.wait(max(0.0, min(1.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                self._take_unconfirmed_as_cancelled()
                return
