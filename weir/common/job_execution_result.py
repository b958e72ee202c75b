"""``JobExecutionResult``: what ``execute()`` returns (defined in ``weir.core.executor``)."""

from weir.core.executor import JobExecutionResult, JobID

__all__ = ["JobExecutionResult", "JobID"]
