"""YARN sessions beyond the one of `make test` (`make test-long`), on Hadoop's minicluster:
an ApplicationMaster killed under ZooKeeper high availability is restarted by YARN as a new
attempt that recovers the running job from its checkpoint in HDFS, its job graph kept in
HDFS (high-availability.storageDir); the client's environment packed and shipped runs the
master and the TaskManagers; two sessions in two queues at once, one of them attached and
stopped by typing `stop`, the other giving its containers back once idle."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from ha_cluster import expected_running_sums
from yarn_sessions import (
    BIN,
    SLOTS_TIMEOUT_S,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    SessionClient,
    committed_in_hdfs,
    running_containers,
    wait_for,
)

from weir.client.yarn_client import YarnRestClient
from weir.client.yarn_properties import read_properties
from weir.core.errors import WeirError

pytestmark = pytest.mark.long

WHERE_WEIR_RUNS = BIN.parents[1] / "tests" / "e2e" / "jobs" / "where_weir_runs.py"


@pytest.fixture(autouse=True)
def _no_session_left(hadoop):
    """A failed test must not leave its applications holding the minicluster's memory."""
    before = {a["id"] for a in hadoop.applications("RUNNING,ACCEPTED")}
    yield
    yarn = YarnRestClient(hadoop.rm_webapp)
    for app in hadoop.applications("RUNNING,ACCEPTED"):
        if app["id"] not in before:
            yarn.kill(app["id"])


def _job_status(client: SessionClient, job_id: str) -> str:
    try:
        with client.dispatcher() as gateway:
            return gateway.job_details(job_id).status
    except WeirError:  # the leader is changing: ask again
        return ""


def _tasks_running(client: SessionClient, job_id: str) -> bool:
    """Every task of the job RUNNING, as the Dispatcher that leads now reports it."""
    try:
        with client.dispatcher() as gateway:
            tasks = gateway.job_details(job_id).tasks
    except WeirError:  # the leader is changing: ask again
        return False
    return bool(tasks) and all(t.state == "RUNNING" for t in tasks)


def test_a_killed_application_master_is_restarted_and_recovers_its_job(
    hadoop, zookeeper, tmp_path
) -> None:
    base = hadoop.webhdfs_url(f"/yarn-ha/{uuid.uuid4().hex[:8]}")
    client = SessionClient(
        hadoop,
        tmp_path / "client",
        {
            "high-availability.type": "zookeeper",
            "high-availability.zookeeper.quorum": zookeeper.address,
            "high-availability.storageDir": f"{base}/ha",
            "high-availability.zookeeper.client.session-timeout": "4 s",
            # A stall of the loaded machine suspends connections; by default (false) that
            # ends the ApplicationMaster's attempt, and this test counts on its attempts.
            "high-availability.zookeeper.client.tolerate-suspended-connections": "true",
        },
    )
    application_id = client.start_detached("-D", "yarn.application-attempts=2")
    records = 60_000
    job_id = client.submit_running_sum(f"{base}/out", f"{base}/chk", records)
    with client.dispatcher() as gateway:
        wait_for(
            lambda: gateway.checkpoint_statistics(job_id).num_completed >= 2,
            SLOTS_TIMEOUT_S,
            "completed checkpoints",
        )
    first_am = YarnRestClient(hadoop.rm_webapp).application_master(application_id)
    assert first_am is not None
    killed = time.monotonic()
    hadoop.signal_container(first_am.container_id)

    def second_attempt() -> bool:
        am = YarnRestClient(hadoop.rm_webapp).application_master(application_id)
        return am is not None and am.container_id != first_am.container_id

    wait_for(second_attempt, START_TIMEOUT_S, "YARN's second attempt")
    wait_for(lambda: _tasks_running(client, job_id), 3 * SLOTS_TIMEOUT_S, "the job recovered")
    recovered_s = time.monotonic() - killed
    wait_for(lambda: _job_status(client, job_id) == "FINISHED", 3 * SLOTS_TIMEOUT_S, "the job")
    assert committed_in_hdfs(f"{base}/out") == expected_running_sums(records)
    with client.dispatcher() as gateway:
        assert gateway.checkpoint_statistics(job_id).num_restored >= 1
    # `weir list` without -m finds the new attempt's Dispatcher in ZooKeeper.
    assert job_id in client.weir("list", "-a")
    report = hadoop.application(application_id)
    assert report["state"] == "RUNNING"

    client.yarn_session("-id", application_id, "stop", timeout=STOP_TIMEOUT_S)
    report = hadoop.application(application_id)
    assert (report["state"], report["finalStatus"]) == ("FINISHED", "SUCCEEDED")
    print(f"\nApplicationMaster kill to the job's tasks RUNNING again: {recovered_s:.1f} s")


def test_a_session_runs_from_the_shipped_environment(hadoop, tmp_path) -> None:
    installed = SessionClient(hadoop, tmp_path / "installed")
    started = time.monotonic()
    plain = installed.start_detached()
    plain_s = time.monotonic() - started
    installed.yarn_session("-id", plain, "stop", timeout=STOP_TIMEOUT_S)

    shipping = SessionClient(hadoop, tmp_path / "shipping")
    started = time.monotonic()
    output = shipping.yarn_session(*shipping.session_args("-d", "--ship-environment"))
    shipped_s = time.monotonic() - started
    assert "Packed " in output
    recorded = read_properties({"yarn.properties-file.location": str(shipping.root / "props")})
    assert recorded is not None
    lines = [
        line.removeprefix("WEIR AT ")
        for line in shipping.weir("run", str(WHERE_WEIR_RUNS), timeout=SLOTS_TIMEOUT_S).splitlines()
        if line.startswith("WEIR AT ")
    ]
    assert len(lines) == 1
    prefix, weir_init = lines[0].split("|")
    # The TaskManager's Python is the unpacked archive's, in its YARN container, and Weir
    # comes from it, not from this checkout.
    assert prefix.endswith("/environment") and "/appcache/" in prefix
    assert weir_init.startswith(f"{prefix}/lib/") and weir_init.endswith("weir/__init__.py")
    shipping.yarn_session("-id", recorded.application_id, "stop", timeout=STOP_TIMEOUT_S)
    report = hadoop.application(recorded.application_id)
    assert (report["state"], report["finalStatus"]) == ("FINISHED", "SUCCEEDED")
    packing = next(line for line in output.splitlines() if line.startswith("Packed "))
    print(
        f"\nsession start, Weir installed: {plain_s:.1f} s; shipped: {shipped_s:.1f} s ({packing})"
    )


def test_two_sessions_in_two_queues_one_attached_and_stopped_by_typing_stop(
    hadoop, tmp_path
) -> None:
    base = hadoop.webhdfs_url(f"/two-queues/{uuid.uuid4().hex[:8]}")
    detached = SessionClient(hadoop, tmp_path / "a")
    first = detached.start_detached(
        "-qu", "default", "-D", "resourcemanager.taskmanager-timeout=5 s"
    )

    attached = SessionClient(hadoop, tmp_path / "b")
    process = subprocess.Popen(
        [str(BIN / "yarn-session.sh"), *attached.session_args("-qu", "second", "-nm", "b")],
        env=attached.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        props = {"yarn.properties-file.location": str(attached.root / "props")}
        wait_for(
            lambda: (r := read_properties(props)) is not None and r.dispatcher_address,
            START_TIMEOUT_S,
            "the attached session",
        )
        second = read_properties(props).application_id  # type: ignore[union-attr]
        assert hadoop.application(first)["queue"] == "root.default"
        assert hadoop.application(second)["queue"] == "root.second"

        records = 4_000
        jobs = [
            (client, client.submit_running_sum(f"{base}/{name}/out", f"{base}/{name}/chk", records))
            for name, client in (("a", detached), ("b", attached))
        ]
        for client, job_id in jobs:
            wait_for(
                lambda c=client, j=job_id: _job_status(c, j) in ("FINISHED", "FAILED"),
                SLOTS_TIMEOUT_S,
                f"job {job_id}",
            )
            assert _job_status(client, job_id) == "FINISHED"
        for name in ("a", "b"):
            assert committed_in_hdfs(f"{base}/{name}/out") == expected_running_sums(records)

        # Idle for resourcemanager.taskmanager-timeout: its containers go back to YARN.
        wait_for(lambda: running_containers(hadoop, first) == 1, 120, "idle containers released")

        assert process.stdin is not None
        process.stdin.write("stop\n")
        process.stdin.flush()
        out, _ = process.communicate(timeout=STOP_TIMEOUT_S)
        assert process.returncode == 0, out
        assert f"YARN application {second} ended FINISHED (SUCCEEDED)" in out
    finally:
        if process.poll() is None:
            process.kill()
    detached.yarn_session("-id", first, "stop", timeout=STOP_TIMEOUT_S)
    for application_id in (first, second):
        report = hadoop.application(application_id)
        assert (report["state"], report["finalStatus"]) == ("FINISHED", "SUCCEEDED")
