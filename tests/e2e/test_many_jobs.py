"""Many jobs submitted at once to a cluster of two TaskManagers (started with
deploy/bin/start-cluster.sh): they queue for the two slots and are served in the order
they asked, every one finishes, and no TaskManager is lost on the way (a slot request
holds no ResourceManager thread, so heartbeats are answered throughout)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from cluster_harness import BIN, JOB_TIMEOUT_S, REPO, WeirCluster, wait_until

from weir.client.dispatcher_client import DispatcherGateway

TINY_JOB = Path(__file__).parent / "jobs" / "tiny.py"
JOB_ID = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")
JOBS = 20
# Heartbeats a little tighter than the defaults (10 s / 50 s) so that a starved
# ResourceManager loses its TaskManagers within the test; loose enough for a loaded
# two-core machine running twenty clients. A slot request waits long enough for twenty
# small jobs to run one after the other on two slots.
CONF = {
    "heartbeat.interval": "1 s",
    "heartbeat.timeout": "20 s",
    "slot.request.timeout": "3 min",
}
_QUEUED = re.compile(r"job ([0-9a-f]{32}): request \w+ for \d+ slots queued as #(\d+)")
_GRANTED = re.compile(r"job ([0-9a-f]{32}): request \w+ \(#(\d+)\) gets \d+ slots")


@pytest.fixture
def cluster(tmp_path: Path):
    cluster = WeirCluster(tmp_path / "weir", "local[2]", extra_conf=CONF)
    result = cluster.start("-n", "2")
    assert result.returncode == 0, cluster.explain(result)
    yield cluster
    stop = cluster.stop()
    assert stop.returncode == 0, cluster.explain(stop)


def _task_managers(cluster: WeirCluster) -> set[str]:
    with DispatcherGateway(cluster.address, security=cluster.security()) as gateway:
        return {tm.resource_id for tm in gateway.list_task_managers()}


def _check_all_finished_in_order_and_none_lost(
    cluster: WeirCluster, job_ids: list[str], task_managers: set[str]
) -> None:
    with DispatcherGateway(cluster.address, security=cluster.security()) as gateway:

        def all_ended() -> bool:
            jobs = {j.job_id: j.status for j in gateway.list_jobs(include_terminated=True)}
            return all(jobs.get(j) in ("FINISHED", "FAILED", "CANCELED") for j in job_ids)

        wait_until(all_ended, 5 * JOB_TIMEOUT_S, f"{len(job_ids)} jobs to end")
        jobs = {j.job_id: j for j in gateway.list_jobs(include_terminated=True)}
    failed = {j: jobs[j].failure_cause for j in job_ids if jobs[j].status != "FINISHED"}
    assert not failed, cluster.explain(subprocess.CompletedProcess([], 0, str(failed), ""))
    log = cluster.log_text()
    assert " lost: " not in log, cluster.explain(subprocess.CompletedProcess([], 0, "", ""))
    assert _task_managers(cluster) == task_managers
    # Served in the order they asked: the ResourceManager grants in the order it queued.
    queued = {m.group(1): int(m.group(2)) for m in _QUEUED.finditer(log)}
    granted = [(m.group(1), int(m.group(2))) for m in _GRANTED.finditer(log)]
    granted = [(job, n) for job, n in granted if job in job_ids]
    assert sorted(job for job, _ in granted) == sorted(job_ids)
    assert all(queued[job] == n for job, n in granted)
    assert [n for _, n in granted] == sorted(n for _, n in granted)


def _submit_at_once(cluster: WeirCluster, seconds: float) -> list[str]:
    """JOBS `weir run -d` processes of the tiny job, started together; their job ids."""
    runs = [
        subprocess.Popen(
            [str(BIN / "weir"), "run", "-d", str(TINY_JOB), "--seconds", str(seconds)],
            env=cluster.env(),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(JOBS)
    ]
    job_ids = []
    for run in runs:
        out, err = run.communicate(timeout=5 * JOB_TIMEOUT_S)
        assert run.returncode == 0, err
        match = JOB_ID.search(out)
        assert match, out
        job_ids.append(match.group(1))
    return job_ids


@pytest.mark.long
def test_twenty_detached_runs_at_once_all_finish_in_order(cluster: WeirCluster) -> None:
    """The case measured in the issue: twenty `weir run -d` at once, each job running
    long enough (5 s) that more requests wait for slots than the ResourceManager has
    server threads. Then sixteen failed at slot.request.timeout and both TaskManagers
    were lost; now they queue and all finish, about a minute for all."""
    wait_until(lambda: len(_task_managers(cluster)) == 2, 60, "two TaskManagers")
    task_managers = _task_managers(cluster)
    job_ids = _submit_at_once(cluster, seconds=5.0)
    _check_all_finished_in_order_and_none_lost(cluster, job_ids, task_managers)


@pytest.mark.long  # many jobs: a soak
def test_detached_runs_at_once_all_finish_in_order(cluster: WeirCluster) -> None:
    """The same with one-second jobs: fewer wait at once, the test takes seconds."""
    wait_until(lambda: len(_task_managers(cluster)) == 2, 60, "two TaskManagers")
    task_managers = _task_managers(cluster)
    job_ids = _submit_at_once(cluster, seconds=1.0)
    _check_all_finished_in_order_and_none_lost(cluster, job_ids, task_managers)
