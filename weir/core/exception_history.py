"""A job's exception history (Flink's ``ExceptionHistoryEntry``s): one entry per failover,
kept by the JobMaster's scheduler, shown by the REST API (``/jobs/:jobid/exceptions``) and,
as one line per restart, by an attached ``weir run``."""

from __future__ import annotations

from dataclasses import dataclass, fields

from weir.proto import common_pb2

__all__ = ["CLEANUP_FAILURE_MARKER", "ExceptionHistoryEntry", "failure_summary"]

CLEANUP_FAILURE_MARKER = "\nWhile cleaning up, another error occurred:\n"
"""Joins a task's failure to an error of its cleanup in the text it reports: what comes
after it is not the cause."""

_TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True, slots=True)
class ExceptionHistoryEntry:
    """One failover of a job: a task's failure (``task_name`` and where it ran) or a
    failure of the whole job (a lost checkpoint storage, too many failed checkpoints)."""

    timestamp_ms: int
    failure_cause: str
    """The task's formatted failure (with the user's traceback), or the job's."""
    task_name: str = ""
    """``"Map (1/2)"``; empty for a failure of the whole job."""
    resource_id: str = ""
    attempt_number: int = 0
    """The job attempt that failed: 0 for the first; the restart after it deploys the
    next."""
    restarted: bool = False
    """The job restarted after it; False: the job failed."""
    non_recoverable: bool = False
    """No restart could cure it (``weir.core.throwable_classifier``)."""

    @property
    def summary(self) -> str:
        """One line: the failed task and the first line of what it raised."""
        what = failure_summary(self.failure_cause)
        return f"{self.task_name} failed: {what}" if self.task_name else what

    def to_proto(self) -> common_pb2.ExceptionHistoryEntry:
        return common_pb2.ExceptionHistoryEntry(
            **{f.name: getattr(self, f.name) for f in fields(self)}
        )

    @staticmethod
    def from_proto(message: common_pb2.ExceptionHistoryEntry) -> ExceptionHistoryEntry:
        return ExceptionHistoryEntry(
            **{f.name: getattr(message, f.name) for f in fields(ExceptionHistoryEntry)}
        )


def failure_summary(cause: str) -> str:
    """The first line of the error a failure's text ends in: of a formatted traceback, the
    line that names the exception raised last (the outermost of a chain), its class
    without its module; of any other text, its first line."""
    text = cause.split(CLEANUP_FAILURE_MARKER, 1)[0]
    if _TRACEBACK in text:
        last = text.rsplit(_TRACEBACK, 1)[1]
        raised = next(
            (line for line in last.splitlines() if line.strip() and not line[0].isspace()), ""
        )
        if raised:
            head, colon, message = raised.partition(":")
            if " " not in head:  # a class name, qualified by its module
                return f"{head.rsplit('.', 1)[-1]}{colon}{message}"
            return raised
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
