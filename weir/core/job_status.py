"""``JobStatus``: the states of a job (Flink's ``org.apache.flink.api.common.JobStatus``).

One enum for the runtime and for users: ``weir.common.JobStatus`` is this class, so its
members, values and order are PyFlink's (``pyflink.common.JobStatus``). The services
report a status by its name (``JobStatus.RUNNING.name``) on the wire and read it back
with ``JobStatus[name]``; the numbers are PyFlink's and mean nothing to the runtime.
"""

from __future__ import annotations

import enum

__all__ = ["JobStatus"]


class JobStatus(enum.Enum):
    """Where a job is in its life. ``JobClient.get_job_status().result()`` gives one."""

    CREATED = 0
    RUNNING = 1
    FAILING = 2
    FAILED = 3
    CANCELLING = 4
    CANCELED = 5
    FINISHED = 6
    RESTARTING = 7
    SUSPENDED = 8
    RECONCILING = 9
    INITIALIZING = 10
    """Flink's Java JobStatus has it (a job whose JobMaster is starting) and the runtime
    reports it; PyFlink's enum lacks it, so it comes last, after PyFlink's members."""

    def is_globally_terminal_state(self) -> bool:
        """Complete for good: it will not fail, restart or be recovered any more."""
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        """Terminal on this JobManager: globally terminal, or SUSPENDED."""
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED
