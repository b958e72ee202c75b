"""The ExecutionFailureHandler: what a failure of a job leads to, and what the job failed
of (Flink's ExecutionFailureHandler with the scheduler's exception history).

Each failure of the running job, a task's or the whole job's, is one call to
``handle_failure``: it becomes the job's ``failure_cause``, counts with the restart
strategy (``restart-strategy.*``, with its failure-rate bookkeeping), goes into the
exception history (``web.exception-history-size`` entries at most), and the answer says
whether the job restarts: never for a failure no restart can cure (a non-recoverable
error), whatever the strategy allows. A task of the same attempt that fails after the
failover began (``handle_late_failure``) may still be the cause: the producer whose
failure its consumers reported first, or an error no restart can cure, which calls off
the restart under way.

Bookkeeping only: no I/O, no lock, no thread. The scheduler calls it under its own lock.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import time

from weir.core import config as cfg
from weir.core.exception_history import ExceptionHistoryEntry
from weir.core.throwable_classifier import ThrowableType
from weir.jobmanager.execution_graph import ExecutionVertex
from weir.jobmanager.failure_cause import is_consequence
from weir.jobmanager.restart_strategy import RestartBackoffTimeStrategy, create_restart_strategy

logger = logging.getLogger(__name__)


class ExecutionFailureHandler:
    """The failures of the job ``job_id``, configured by the job's ``config``."""

    def __init__(self, job_id: str, config: dict[str, str]) -> None:
        self._job_id = job_id
        self.failure_cause = ""
        """Why the job failed or last failed over; empty while it never did."""
        self.failure_ms: int | None = None
        """When the last failover began (ms since the epoch), for recovery-time figures."""
        self.restart_strategy: RestartBackoffTimeStrategy = create_restart_strategy(config)
        self._exception_history: collections.deque[ExceptionHistoryEntry] = collections.deque(
            maxlen=cfg.get(config, cfg.WEB_EXCEPTION_HISTORY_SIZE)
        )

    def handle_failure(
        self,
        cause: str,
        attempt_number: int,
        non_recoverable: bool = False,
        failed: ExecutionVertex | None = None,
    ) -> bool:
        """Record a failure of attempt ``attempt_number`` (its cause, the restart
        strategy's count, the exception history) and say whether the job restarts.
        ``failed``: the task whose failure it is; None for a failure of the whole job."""
        now_ms = int(time.time() * 1000)
        self.failure_cause = cause
        self.failure_ms = now_ms
        self.restart_strategy.notify_failure(now_ms)
        restart = not non_recoverable and self.restart_strategy.can_restart()
        self._exception_history.append(
            ExceptionHistoryEntry(
                timestamp_ms=now_ms,
                failure_cause=failed.current.failure_cause if failed is not None else cause,
                task_name=failed.task_name if failed is not None else "",
                resource_id=(
                    failed.current.slot.resource_id
                    if failed is not None and failed.current.slot is not None
                    else ""
                ),
                attempt_number=attempt_number,
                restarted=restart,
                non_recoverable=non_recoverable,
            )
        )
        return restart

    def handle_late_failure(
        self, ev: ExecutionVertex, throwable_type: ThrowableType, *, restarting: bool
    ) -> bool:
        """A task of the attempt failed after the failover began (another task's report
        came first). The producer's own failure, after its consumer's, is the cause; one
        no restart can cure is the cause too, and calls off a restart under way
        (``restarting``: the job is RESTARTING). Returns True when it calls it off: the
        caller fails the job with ``failure_cause``."""
        cause = ev.current.failure_cause
        producer = is_consequence(self.failure_cause) and not is_consequence(cause)
        calls_off = throwable_type is ThrowableType.NON_RECOVERABLE_ERROR and restarting
        if not producer and not calls_off:
            return False
        self.failure_cause = f"{ev.task_name} failed:\n{cause}"
        if self._exception_history:
            self._exception_history[-1] = dataclasses.replace(
                self._exception_history[-1],
                failure_cause=cause,
                task_name=ev.task_name,
                resource_id=ev.current.slot.resource_id if ev.current.slot else "",
                **({"restarted": False, "non_recoverable": True} if calls_off else {}),
            )
        if calls_off:
            logger.info(
                "job %s: restart called off: no restart can cure %s",
                self._job_id,
                self._exception_history[-1].summary if self._exception_history else cause,
            )
        return calls_off

    def backoff_time_ms(self) -> int:
        """How long the restart the last ``handle_failure`` allowed waits first."""
        return self.restart_strategy.get_backoff_time_ms()

    def exception_history(self) -> tuple[ExceptionHistoryEntry, ...]:
        """The job's failovers, oldest first (``web.exception-history-size`` at most)."""
        return tuple(self._exception_history)
