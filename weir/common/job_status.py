"""``JobStatus``: the states of a job, as PyFlink's ``pyflink.common.JobStatus``.

Defined in ``weir.core.job_status``, where the services use the same enum.
"""

from weir.core.job_status import JobStatus

__all__ = ["JobStatus"]
