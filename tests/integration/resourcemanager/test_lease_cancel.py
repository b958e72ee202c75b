"""A lease's Spark job cancelled on a real SparkContext: the TaskManager inside it is
interrupted, the lease reports why it ended, and cancelling a lease whose job has already
ended is a quiet no-op (it is what a ResourceManager's close does in a race with the job's
own end)."""

from __future__ import annotations

from typing import Any

import pytest
from _rm_testing import wait_until

from weir.resourcemanager.spark_launcher import SparkTaskManagerLauncher, job_group

pytestmark = pytest.mark.spark


def test_a_cancelled_lease_ends_with_its_cause_and_a_second_cancel_does_nothing(
    spark_context: Any,
) -> None:
    ended: list[Any] = []
    # Nothing answers at this address: the TaskManager keeps trying to register, so its
    # lease runs until it is cancelled.
    launcher = SparkTaskManagerLauncher(
        spark_context,
        {"resourcemanager.taskmanager.max": "1"},
        lambda: "127.0.0.1:1",
        ended.append,
    )
    launcher.launch("cancel-me")
    tracker = spark_context.statusTracker()

    def running_jobs() -> list[int]:
        return [
            job
            for job in tracker.getJobIdsForGroup(job_group("cancel-me"))
            if (info := tracker.getJobInfo(job)) is not None and info.status == "RUNNING"
        ]

    wait_until(running_jobs, "the lease's Spark job to start")
    launcher.cancel("cancel-me")
    assert launcher.join("cancel-me", 60), "the lease's job did not end after cancellation"
    wait_until(lambda: ended, "the lease's end to be reported")
    assert ended[0].lease_id == "cancel-me"
    assert ended[0].error is not None and "cancel" in ended[0].error.lower(), ended[0]
    # The status tracker hears of the job's end through Spark's listener bus, a moment on.
    wait_until(lambda: not running_jobs(), "Spark to see the lease's job ended")
    assert not launcher.is_running("cancel-me")
    # Its job is over: a second cancel finds nothing to do and raises nothing.
    launcher.cancel("cancel-me")
    assert len(ended) == 1
