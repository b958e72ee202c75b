"""A Weir session on Hadoop's own YARN and HDFS (MiniYARNCluster and MiniDFSCluster, in one
machine): started detached with yarn-session.sh, it holds only its ApplicationMaster until
a job needs slots; a checkpointed job writes its checkpoints and its exactly-once FileSink
output to HDFS (webhdfs://); a TaskManager container killed by YARN is replaced by exactly
one new one (the leases counted in the master's log), the job recovers from its checkpoint
on the survivor and that one with nothing lost or repeated; the stop ends the application
FINISHED, as YARN's own REST API reports it. A second client attaches to it by its
application id."""

from __future__ import annotations

import math
import os
import time
import uuid

import pytest
from ha_cluster import expected_running_sums
from master_log import all_running_at, leases
from yarn_sessions import (
    SLOTS_TIMEOUT_S,
    STOP_TIMEOUT_S,
    SessionClient,
    committed_in_hdfs,
    container_of,
    master_log,
    running_containers,
    wait_for,
)

from weir.client.yarn_properties import read_properties

RECORDS = 20_000


def _all_running(client: SessionClient, job_id: str, attempt: int = 0) -> set[tuple[str, int]]:
    """The tasks' (TaskManager, attempt number) pairs once all run at ``attempt`` or
    later; else empty."""
    with client.dispatcher() as gateway:
        tasks = gateway.job_details(job_id).tasks
    if not tasks or not all(t.state == "RUNNING" and t.attempt_number >= attempt for t in tasks):
        return set()
    return {(t.resource_id, t.attempt_number) for t in tasks}


@pytest.mark.long
def test_a_detached_session_runs_a_job_through_a_container_kill_and_stops_finished(
    hadoop, tmp_path
) -> None:
    client = SessionClient(hadoop, tmp_path / "client")
    base = hadoop.webhdfs_url(f"/yarn-session/{uuid.uuid4().hex[:8]}")

    started = time.monotonic()
    application_id = client.start_detached("-nm", "weir-e2e")
    session_start_s = time.monotonic() - started
    report = hadoop.application(application_id)
    assert (report["state"], report["name"]) == ("RUNNING", "weir-e2e")
    # A fresh session holds its ApplicationMaster and nothing else.
    assert running_containers(hadoop, application_id) == 1

    # Another client attaches by application id and reaches the session without -m too.
    other = SessionClient(hadoop, tmp_path / "other")
    attached = other.yarn_session("-id", application_id, "-d")
    assert f"YARN application {application_id}: Weir session ready" in attached
    assert "No running jobs." in other.weir("list")

    # No -m: the job goes to the session of the properties file.
    submitted = time.monotonic()
    job_id = client.submit_running_sum(f"{base}/out", f"{base}/chk", RECORDS)
    wait_for(lambda: _all_running(client, job_id), SLOTS_TIMEOUT_S, "the job's tasks RUNNING")
    slots_s = time.monotonic() - submitted
    assert running_containers(hadoop, application_id) == 3  # the AM and two TaskManagers

    with client.dispatcher() as gateway:
        wait_for(
            lambda: gateway.checkpoint_statistics(job_id).num_completed >= 1,
            SLOTS_TIMEOUT_S,
            "a completed checkpoint in HDFS",
        )
        victim, survivor = gateway.list_task_managers()
    before = leases(master_log(hadoop, application_id))
    assert len(before) == 2, before
    container = container_of(victim.pid)
    killed, killed_at = time.monotonic(), time.time()
    hadoop.signal_container(container)  # YARN's NodeManager kills it
    running = wait_for(lambda: _all_running(client, job_id, 1), SLOTS_TIMEOUT_S, "recovery")
    recovery_s = time.monotonic() - killed
    # One lost, one leased: every lease the restart caused was started before its slots
    # were offered, and the restarted job (one restart) runs on the survivor and the new
    # one alone.
    log = master_log(hadoop, application_id)
    after = leases(log)
    running_s = (all_running_at(log, max(a for _, a in running), killed_at) or math.nan) - killed_at
    print(
        f"\nYARN container kill: every task RUNNING again after {running_s:.1f} s (the master's "
        f"log), new leases: {len(after) - len(before)}, load {os.getloadavg()[0]:.1f}"
    )
    assert after[:2] == before and len(after) == 3, after
    with client.dispatcher() as gateway:
        registered = {tm.resource_id for tm in gateway.list_task_managers()}
    hosts = {resource_id for resource_id, _ in running}
    assert {attempt for _, attempt in running} == {1}, running
    assert survivor.resource_id in hosts and hosts == registered, running
    assert len(registered) == 2, registered

    with client.dispatcher() as gateway:
        wait_for(
            lambda: gateway.job_details(job_id).status in ("FINISHED", "FAILED", "CANCELED"),
            SLOTS_TIMEOUT_S,
            "the job to end",
        )
        assert gateway.job_details(job_id).status == "FINISHED"
        stats = gateway.checkpoint_statistics(job_id)
        assert stats.num_restored >= 1
        assert stats.latest_completed_path.startswith(f"{base}/chk/")
        assert all(tm.resource_id != victim.resource_id for tm in gateway.list_task_managers())
    assert committed_in_hdfs(f"{base}/out") == expected_running_sums(RECORDS)

    client.yarn_session("-id", application_id, "stop", timeout=STOP_TIMEOUT_S)
    report = hadoop.application(application_id)
    assert (report["state"], report["finalStatus"]) == ("FINISHED", "SUCCEEDED")
    props = {"yarn.properties-file.location": str(client.root / "props")}
    assert read_properties(props) is None
    print(
        f"\nYARN session: start {session_start_s:.1f} s, first job's slots "
        f"{slots_s:.1f} s, container-kill recovery {recovery_s:.1f} s"
    )


@pytest.fixture(autouse=True)
def _no_session_left(hadoop):
    """A failed test must not leave its application holding the minicluster's memory."""
    before = {a["id"] for a in hadoop.applications("RUNNING,ACCEPTED")}
    yield
    from weir.client.yarn_client import YarnRestClient

    yarn = YarnRestClient(hadoop.rm_webapp)
    for app in hadoop.applications("RUNNING,ACCEPTED"):
        if app["id"] not in before:
            yarn.kill(app["id"])
