"""``JobClient``: what ``env.execute_async()`` returns, as PyFlink's
``pyflink.common.job_client.JobClient``.

Defined in ``weir.core.job_client``, where the executors that return it find it.
"""

from weir.core.job_client import JobClient

__all__ = ["JobClient"]
