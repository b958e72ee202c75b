"""A cluster across three hosts, each a network namespace with its own loopback: host A
runs a Spark standalone master and the Weir master (start-cluster.sh), hosts B and C one
Spark worker each (pyspark's own scripts). From host A, `weir run -p 4` runs a keyed job
whose exchange crosses between B and C; a TaskManager on B is killed and the job recovers
from its checkpoint with exactly-once FileSink output. Mutual TLS (made with `weir
certs`), a token and Spark's authentication are on."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_harness import (
    JOB_TIMEOUT_S,
    PYTHON,
    SPARK_HOME,
    SPARK_READY_TIMEOUT_S,
    START_TIMEOUT_S,
    WeirCluster,
    wait_until,
)
from ha_cluster import committed, expected_running_sums
from netns import Host, hosts_for_a_test

JOBS = Path(__file__).parent / "jobs"
JOB = JOBS / "keyed_sum_across_hosts.py"
JOB_ID = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")
PRINT_MARK = "weir-across-hosts-print"
RECORDS = 6_000
KEYS = 8
SPARK_PORT = 7077
SPARK_WEBUI_PORT = 8080
# Four leases on the standalone workers: an executor JVM per worker, then a Python worker
# and a TaskManager per lease. Well under a minute on an idle machine; past 120 s on a
# two-core machine under a load of 20+, so it gets START_TIMEOUT_S twice and more.
LEASES_TIMEOUT_S = 2.5 * START_TIMEOUT_S

# Six JVMs (two Spark daemons per host side, executors, the master's driver) and a job
# killed halfway: two to four minutes on two cores, so it runs in `make test-long`, and
# its own deadlines (each phase's wait_until) sum past the suite's 300 s per test.
pytestmark = [pytest.mark.spark, pytest.mark.long, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def hosts() -> Iterator[list[Host]]:
    """Hosts A, B and C; removed with whatever still runs in them, however the tests end."""
    with hosts_for_a_test(f"wmh{os.getpid() % 1000}", 3) as hosts:
        yield hosts


def _run_in(host: Host, argv: list[str], env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        host.command(argv), env=env, capture_output=True, text=True, timeout=timeout
    )


def _spark_env(host: Host, root: Path, secret: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP=host.address,
        SPARK_LOG_DIR=str(root / host.name / "log"),
        SPARK_PID_DIR=str(root / host.name / "pid"),
        SPARK_WORKER_DIR=str(root / host.name / "work"),
        SPARK_IDENT_STRING=f"weir-{host.name}",
        # Spark's own authentication, with the secret the Weir master is given too.
        SPARK_DAEMON_JAVA_OPTS=f"-Dspark.authenticate=true -Dspark.authenticate.secret={secret}",
        PYSPARK_PYTHON=PYTHON,
        PYSPARK_DRIVER_PYTHON=PYTHON,
    )
    return env


def _alive_workers(a: Host) -> int:
    code = (
        "import json, urllib.request\n"
        f"r = urllib.request.urlopen('http://{a.address}:{SPARK_WEBUI_PORT}/json/', timeout=5)\n"
        "print(sum(w['state'] == 'ALIVE' for w in json.load(r)['workers']))"
    )
    result = _run_in(a, [PYTHON, "-c", code], timeout=30)
    return int(result.stdout) if result.returncode == 0 else -1


def _spark_daemon(host: Host, env: dict[str, str], *args: str) -> None:
    result = _run_in(host, [str(SPARK_HOME / "sbin" / "spark-daemon.sh"), *args], env=env)
    assert result.returncode == 0, result.stderr


def _query(cluster: WeirCluster, a: Host, *args: str):
    result = _run_in(
        a,
        [PYTHON, str(JOBS / "cluster_query.py"), cluster.address, *args],
        env=cluster.env(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _job(cluster: WeirCluster, a: Host, job_id: str) -> dict:
    """The job's details; a FAILED job fails the test with its cause at once."""
    details = _query(cluster, a, "job", job_id)
    if details["status"] == "FAILED":
        pytest.fail(f"the job failed: {details['failure_cause']}")
    return details


def _latest_checkpoint(checkpoints: Path) -> int:
    return max((int(p.name[4:]) for p in checkpoints.glob("*/chk-*")), default=0)


def test_a_keyed_job_across_hosts_recovers_exactly_once_with_tls(
    hosts: list[Host], tmp_path: Path
) -> None:
    a, b, c = hosts
    secret = secrets.token_hex(16)
    spark_master = f"spark://{a.address}:{SPARK_PORT}"
    cluster = WeirCluster(
        tmp_path / "weir",
        spark_master,
        host=a.address,
        command_prefix=["ip", "netns", "exec", a.name],
        tls=False,  # turned on below as a user does it, with `weir certs`
    )
    # Step one of turning TLS on: `weir certs` for the cluster's hosts.
    made = cluster.weir(
        "certs", "--out", str(tmp_path / "certs"), "--hosts", f"{a.address},{b.address},{c.address}"
    )
    assert made.returncode == 0, made.stderr
    tls_lines = dict(
        line.strip().split(": ", 1) for line in made.stdout.splitlines() if "security." in line
    )
    # Step two: its lines in weir-conf.yaml. TaskManagers find their own address.
    cluster.extra_conf = {
        **tls_lines,
        "security.auth.token": secrets.token_hex(16),
        "spark.authenticate.secret": secret,
        "taskmanager.host": "",
        # Derived from Spark's cores it would count the workers registered at start only.
        "resourcemanager.taskmanager.max": "4",
        "heartbeat.interval": "500 ms",
        "heartbeat.timeout": "6 s",
    }
    cluster.write_conf()

    master_env = _spark_env(a, tmp_path / "spark", secret)
    _spark_daemon(
        a,
        master_env,
        "start",
        "org.apache.spark.deploy.master.Master",
        "1",
        "--host",
        a.address,
        "--port",
        str(SPARK_PORT),
        "--webui-port",
        str(SPARK_WEBUI_PORT),
    )
    wait_until(lambda: _alive_workers(a) >= 0, SPARK_READY_TIMEOUT_S, "the Spark master")
    for worker in (b, c):
        _spark_daemon(
            worker,
            _spark_env(worker, tmp_path / "spark", secret),
            "start",
            "org.apache.spark.deploy.worker.Worker",
            "1",
            spark_master,
            "--host",
            worker.address,
            "--cores",
            "2",
            "--memory",
            "1g",
        )
    wait_until(lambda: _alive_workers(a) >= 2, SPARK_READY_TIMEOUT_S, "two Spark workers")

    started = cluster.start("-n", "4")
    assert started.returncode == 0, cluster.explain(started)
    try:
        registered: list[dict] = []

        def four_registered() -> bool:
            registered[:] = _query(cluster, a, "taskmanagers")
            return len(registered) == 4

        try:
            wait_until(four_registered, LEASES_TIMEOUT_S, "four TaskManagers to register")
        except pytest.fail.Exception as exc:
            tail = "\n".join(cluster.log_text().splitlines()[-40:])
            pytest.fail(f"{exc}; registered: {registered}\n--- master log (tail)\n{tail}")
        taskmanagers = _query(cluster, a, "taskmanagers")
        # Each TaskManager advertises its own host's address, found towards the master.
        by_host = Counter(tm["data_host"] for tm in taskmanagers)
        assert by_host == {b.address: 2, c.address: 2}, taskmanagers

        out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
        submitted = cluster.weir(
            "run",
            "-d",
            "-p",
            "4",
            str(JOB),
            "--output",
            str(out),
            "--checkpoints",
            str(checkpoints),
            "--records",
            str(RECORDS),
        )
        assert submitted.returncode == 0, cluster.explain(submitted)
        job_id = JOB_ID.search(submitted.stdout).group(1)

        wait_until(
            lambda: _job(cluster, a, job_id) and _latest_checkpoint(checkpoints) >= 2,
            JOB_TIMEOUT_S,
            "two checkpoints",
        )
        details = _job(cluster, a, job_id)
        hosts_of = {tm["resource_id"]: tm["data_host"] for tm in taskmanagers}
        keyed = [t for t in details["tasks"] if t["name"].startswith("Reduce")]
        assert {hosts_of[t["resource_id"]] for t in keyed} == {b.address, c.address}, details

        victim = next(tm for tm in taskmanagers if tm["data_host"] == b.address)
        os.kill(victim["pid"], signal.SIGKILL)

        def recovered() -> bool:
            now = _job(cluster, a, job_id)
            return now["status"] == "FINISHED" or (
                now["status"] == "RUNNING" and all(t["attempt_number"] >= 1 for t in now["tasks"])
            )

        wait_until(recovered, JOB_TIMEOUT_S, "the job to run again after the kill")
        wait_until(
            lambda: _job(cluster, a, job_id)["status"] == "FINISHED",
            JOB_TIMEOUT_S,
            "the job to finish",
        )
        assert committed(out) == expected_running_sums(RECORDS, KEYS)

        # print() of remote tasks: in the taskmanager.out of their TaskManager.
        printed = {
            path.parent.name.removeprefix("taskmanager-")
            for path in cluster.log_dir.glob("taskmanager-*/taskmanager.out")
            if PRINT_MARK in path.read_text()
        }
        assert printed, "no task's print() output found in any taskmanager.out"
        current = {tm["resource_id"]: tm["data_host"] for tm in _query(cluster, a, "taskmanagers")}
        assert {{**hosts_of, **current}.get(rid) for rid in printed} <= {b.address, c.address}
        # ... and on host A, where the job was run from, through `weir logs`.
        # (The killed TaskManager may still be listed, and be named as unreachable.)
        logs = cluster.weir("logs")
        shown = re.findall(
            r"^==> TaskManager (\w+) on ([\d.]+): .*taskmanager\.out", logs.stdout, re.M
        )
        assert len(shown) >= 3, cluster.explain(logs)
        assert {host for _, host in shown} <= {b.address, c.address}, logs.stdout
        assert PRINT_MARK in logs.stdout, logs.stdout
    finally:
        stopped = cluster.stop()
        assert stopped.returncode == 0, cluster.explain(stopped)
