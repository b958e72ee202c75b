"""One cluster for the compat programs: a MiniCluster in the test process, on the session's
SparkContext, with TaskManagers leased once and kept. Each program still runs in a client
process of its own (``run_on_cluster.py``, forked from one that has imported Weir:
``forked_client.py``) and prints to its own stdout."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from weir.client.mini_cluster import MiniCluster

# The programs run at parallelism 3 at most; the TaskManagers stay leased between them.
COMPAT_CLUSTER_CONFIG = {
    "resourcemanager.taskmanager.max": "3",
    "resourcemanager.taskmanager-timeout": "10 min",
    "slot.request.timeout": "60 s",
}


@pytest.fixture(scope="session")
def compat_cluster(spark_context) -> Iterator[MiniCluster]:
    cluster = MiniCluster(COMPAT_CLUSTER_CONFIG, spark_context=spark_context).start()
    yield cluster
    cluster.close()
