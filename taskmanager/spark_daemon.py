"""PySpark's worker daemon with the TaskManager already imported in it.

Spark starts one daemon per executor (``spark.python.daemon.module``, which the
ResourceManager sets to this module) and forks a Python worker from it for every task. A
lease's worker then finds the TaskManager's modules (gRPC, the network stack, the state
backends) loaded instead of importing them itself: about a second of CPU per lease here,
paid once per executor instead. Importing them starts no thread, which the fork requires
(PySpark's daemon imports its worker module after the fork for that reason).
"""

from __future__ import annotations

from pyspark import daemon

import weir.taskmanager.spark_entry  # noqa: F401  (the lease function and what it imports)

if __name__ == "__main__":
    daemon.manager()
