"""Which of the task failures of one failover is the cause the job reports.

A task that fails fails its outputs too: the tasks reading them fail with a
``ProducerFailedError``, and their reports may reach the JobMaster before the producer's
own. Those are consequences; the producer's failure is the cause (what Flink calls the
root exception of the failover).
"""

from __future__ import annotations

from weir.core.errors import ProducerFailedError

_CONSEQUENCES = (f"{ProducerFailedError.__module__}.{ProducerFailedError.__name__}:",)


def is_consequence(failure: str) -> bool:
    """``failure`` (a task's formatted traceback) ended in an error that only says another
    task failed first."""
    last_traceback = failure.rsplit("Traceback (most recent call last):", 1)[-1]
    raised = next(
        (line for line in last_traceback.splitlines() if line and not line[0].isspace()), ""
    )
    return raised.startswith(_CONSEQUENCES)
