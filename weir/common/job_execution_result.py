"""``JobExecutionResult``: what ``execute()`` returns (defined in ``weir.core.executor``)."""

from weir.core.executor import JobExecutionResult

__all__ = ["JobExecutionResult"]
