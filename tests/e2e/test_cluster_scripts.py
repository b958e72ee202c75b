"""The cluster scripts end to end: start-cluster.sh, the ``weir`` CLI against the
running master, stop-cluster.sh; on Spark ``local[2]`` (in the master's own Spark driver)
and on a Spark standalone cluster on loopback."""

from __future__ import annotations

import os
import random
import re
import runpy
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from cluster_harness import (
    BIN,
    JOB_TIMEOUT_S,
    PYTHON,
    REPO,
    WeirCluster,
    free_port,
    is_alive,
    process_family,
    wait_until,
)
from ha_cluster import committed, expected_running_sums

from weir.client.dispatcher_client import DispatcherGateway

WORD_COUNT = REPO / "examples" / "word_count.py"
SLOW_JOB = Path(__file__).parent / "jobs" / "slow_unbounded.py"
JOB_ID = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")


def expected_word_counts() -> dict[str, int]:
    """The example's text counted in plain Python, as the example splits it."""
    text = runpy.run_path(str(WORD_COUNT), run_name="word_count_text")["TEXT"]
    return dict(Counter(word for line in text for word in line.lower().split()))


def read_counts(path: Path) -> dict[str, int]:
    counts = {}
    for line in path.read_text().splitlines():
        word, count = line.rsplit(",", 1)
        counts[word] = int(count)
    return counts


def start(cluster: WeirCluster, *args: str) -> int:
    """start-cluster.sh must succeed and leave a pid file; returns the master's pid."""
    result = cluster.start(*args)
    assert result.returncode == 0, cluster.explain(result)
    assert f"Dispatcher at {cluster.address}" in result.stdout
    assert str(cluster.log_dir) in result.stdout  # it says where the logs are
    return cluster.master_pid()


def run_word_count(cluster: WeirCluster, tmp_path: Path) -> None:
    out = tmp_path / "counts.csv"
    result = cluster.weir("run", str(WORD_COUNT), "--output", str(out))
    assert result.returncode == 0, cluster.explain(result)
    assert JOB_ID.search(result.stdout), result.stdout
    assert read_counts(out) == expected_word_counts()
    # TaskManagers log beside the master, each in files of its own
    tm_logs = list(cluster.log_dir.glob("taskmanager-*/taskmanager.log"))
    assert any("registered with the ResourceManager" in p.read_text() for p in tm_logs)
    assert "registered with the ResourceManager" not in cluster.log_text()


def check_printed_counts_in_weir_logs(cluster: WeirCluster) -> None:
    """What a detached word count printed on the TaskManagers, as `weir logs` shows it."""
    logs = cluster.weir("logs")
    assert logs.returncode == 0, cluster.explain(logs)
    assert logs.stdout.count("==> TaskManager ") == 2, logs.stdout
    printed = re.findall(r"^(?:\d+> )?\((.+),(\d+)\)$", logs.stdout, re.MULTILINE)
    final = {word: max(int(n) for w, n in printed if w == word) for word, _ in printed}
    assert final == expected_word_counts()


def job_status(cluster: WeirCluster, job_id: str) -> str | None:
    """The job's status as ``weir list -a`` shows it, or None if it is not listed."""
    result = cluster.weir("list", "-a")
    assert result.returncode == 0, cluster.explain(result)
    match = re.search(rf" : {job_id} : .* \((\w+)\)$", result.stdout, re.MULTILINE)
    return match.group(1) if match else None


def stop_and_check_nothing_left(cluster: WeirCluster, pid: int) -> None:
    family = process_family(pid)
    # The master's session holds at least the Spark driver JVM that pyspark started.
    assert len(family) > 1, f"no Spark driver found under the master {pid}: {family}"
    result = cluster.stop()
    assert result.returncode == 0, cluster.explain(result)
    assert "warning" not in result.stderr.lower(), cluster.explain(result)
    assert not cluster.pid_file.exists()
    assert not [p for p in family if is_alive(p)], "processes of the master left behind"
    assert not [p for p in process_family(pid) if is_alive(p)]
    assert "master stopped" in cluster.log_text()


# --- local[2]: the fastest path, first --------------------------------------------------


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory):
    """One master on Spark local[2] with two TaskManagers leased at start, shared by the
    tests of TestOnLocalSpark (the last of which stops it)."""
    cluster = WeirCluster(tmp_path_factory.mktemp("weir-local"), "local[2]")
    pid = start(cluster, "-n", "2")
    yield cluster, pid
    if cluster.pid_file.exists():
        cluster.stop()


class TestOnLocalSpark:
    @pytest.fixture
    def cluster(self, local_cluster):
        return local_cluster

    def test_weir_list_answers(self, cluster) -> None:
        weir_cluster, _ = cluster
        result = weir_cluster.weir("list")
        assert result.returncode == 0, weir_cluster.explain(result)
        assert "No running jobs." in result.stdout

    def test_second_start_is_refused(self, cluster) -> None:
        weir_cluster, pid = cluster
        result = weir_cluster.start()
        assert result.returncode == 1
        assert "already running" in result.stderr and str(pid) in result.stderr
        assert weir_cluster.master_pid() == pid and is_alive(pid)

    def test_word_count_matches_a_plain_python_count(self, cluster, tmp_path: Path) -> None:
        run_word_count(cluster[0], tmp_path)

    def test_detached_run_prints_the_job_id_and_list_shows_it(self, cluster) -> None:
        weir_cluster, _ = cluster
        result = weir_cluster.weir("run", "-d", str(WORD_COUNT))  # prints on the TaskManagers
        assert result.returncode == 0, weir_cluster.explain(result)
        match = JOB_ID.search(result.stdout)
        assert match, result.stdout
        job_id = match.group(1)
        assert job_status(weir_cluster, job_id) is not None
        wait_until(
            lambda: job_status(weir_cluster, job_id) == "FINISHED", 120, f"job {job_id} to finish"
        )
        check_printed_counts_in_weir_logs(weir_cluster)

    def test_cancel_makes_a_running_job_canceled(self, cluster) -> None:
        weir_cluster, _ = cluster
        result = weir_cluster.weir("run", "-d", str(SLOW_JOB))
        assert result.returncode == 0, weir_cluster.explain(result)
        job_id = JOB_ID.search(result.stdout).group(1)
        wait_until(
            lambda: job_status(weir_cluster, job_id) == "RUNNING", 120, f"job {job_id} to run"
        )
        cancel = weir_cluster.weir("cancel", job_id)
        assert cancel.returncode == 0, weir_cluster.explain(cancel)
        assert job_id in cancel.stdout
        wait_until(
            lambda: job_status(weir_cluster, job_id) == "CANCELED",
            120,
            f"job {job_id} to be CANCELED",
        )

    def test_stop_leaves_no_process_and_no_pid_file(self, cluster) -> None:
        weir_cluster, pid = cluster
        stop_and_check_nothing_left(weir_cluster, pid)
        again = weir_cluster.stop()  # nothing to stop is not an error
        assert again.returncode == 0 and "No Weir master" in again.stdout


# --- the same with mutual TLS and a token ------------------------------------------------


def test_a_cluster_with_tls_runs_jobs_shows_logs_and_refuses_plaintext(tmp_path: Path) -> None:
    cluster = WeirCluster(tmp_path / "weir", "local[2]", tls=True)
    assert cluster.conf["security.ssl.internal.enabled"] == "true"
    pid = start(cluster, "-n", "2")
    try:
        run_word_count(cluster, tmp_path)
        detached = cluster.weir("run", "-d", str(WORD_COUNT))
        assert detached.returncode == 0, cluster.explain(detached)
        job_id = JOB_ID.search(detached.stdout).group(1)
        wait_until(lambda: job_status(cluster, job_id) == "FINISHED", 120, f"job {job_id}")
        check_printed_counts_in_weir_logs(cluster)
        # A client without the cluster's certificates and token is told what to set.
        bare = tmp_path / "bare-conf"
        bare.mkdir()
        plaintext = subprocess.run(
            [str(BIN / "weir"), "list", "-m", cluster.address],
            env={**cluster.env(), "WEIR_CONF_DIR": str(bare)},
            capture_output=True,
            text=True,
            timeout=JOB_TIMEOUT_S,
        )
        assert plaintext.returncode == 1
        assert "security.ssl.rest" in plaintext.stderr, plaintext.stderr
        assert job_status(cluster, job_id) == "FINISHED"  # and the cluster serves on
    finally:
        stop_and_check_nothing_left(cluster, pid)


# --- failures that need no running master -----------------------------------------------


def test_list_against_a_wrong_address_fails_clearly(tmp_path: Path) -> None:
    cluster = WeirCluster(tmp_path, "local[2]")
    wrong = f"127.0.0.1:{free_port()}"
    result = cluster.weir("list", "-m", wrong, timeout_s=60)
    assert result.returncode == 1
    assert wrong in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_list_without_a_cluster_names_the_configured_address(tmp_path: Path) -> None:
    cluster = WeirCluster(tmp_path, "local[2]")  # its port has no master
    result = cluster.weir("list", timeout_s=60)
    assert result.returncode == 1
    assert cluster.address in result.stderr, result.stderr


def test_start_fails_naming_a_bad_key(tmp_path: Path) -> None:
    cluster = WeirCluster(tmp_path, "local[2]", extra_conf={"jobmanager.rpc.prot": "1"})
    result = cluster.start()
    assert result.returncode == 1
    assert "jobmanager.rpc.prot" in result.stderr, cluster.explain(result)
    assert not cluster.pid_file.exists()


def test_start_fails_naming_a_bad_value(tmp_path: Path) -> None:
    cluster = WeirCluster(tmp_path, "local[2]", extra_conf={"parallelism.default": "zero"})
    result = cluster.start()
    assert result.returncode == 1
    assert "parallelism.default" in result.stderr, cluster.explain(result)
    assert not cluster.pid_file.exists()


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error a command printed, checked to be one line, without a traceback."""
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (bytes(range(256)) * 4, "binary data (a NUL byte at offset 0)"),
        (b"\x89PNG\r\n\x1a\n\xff\xfe\xfd", "not UTF-8 text (byte 0x89 at offset 0)"),
        (b"city = 'K\xf8benhavn'\n", "not UTF-8 text (byte 0xf8 at offset 9)"),
        (b"values = [1, 2\nprint(values)\n", "not valid Python"),
    ],
    ids=["binary", "image", "latin-1", "syntax-error"],
)
def test_run_of_a_job_file_that_is_not_a_python_program_names_the_file(
    tmp_path: Path, content: bytes, says: str
) -> None:
    cluster = WeirCluster(tmp_path, "local[2]")  # no master: the file is refused first
    job = tmp_path / "job.py"
    job.write_bytes(content)
    error = _one_line_error(cluster.weir("run", str(job), timeout_s=60))
    assert str(job) in error and says in error, error


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"env.log.dir: /tmp\n" + bytes(range(256)), "binary data (a NUL byte at offset 18)"),
        (bytes(range(255, 0, -1)) * 4, "not UTF-8 text (byte 0xff at offset 0)"),
    ],
    ids=["binary", "not-utf-8"],
)
def test_a_configuration_file_that_is_not_text_is_named_by_the_cli_and_the_master(
    tmp_path: Path, content: bytes, says: str
) -> None:
    cluster = WeirCluster(tmp_path, "local[2]")
    conf = cluster.conf_dir / "weir-conf.yaml"
    conf.write_bytes(content)
    for result in (cluster.weir("list", timeout_s=60), cluster.weir("run", str(WORD_COUNT))):
        error = _one_line_error(result)
        assert str(conf) in error and says in error, error
    started = cluster.start()
    assert started.returncode == 1, cluster.explain(started)
    assert str(conf) in started.stderr and "Traceback" not in started.stderr, started.stderr
    assert not cluster.pid_file.exists()


# --- Spark standalone on loopback -------------------------------------------------------


@pytest.mark.spark
def test_word_count_on_a_spark_standalone_cluster(spark_standalone, tmp_path: Path) -> None:
    cluster = WeirCluster(tmp_path / "weir", spark_standalone.master_url)
    pid = start(cluster, "--taskmanagers", "2")
    try:
        run_word_count(cluster, tmp_path)
        listed = cluster.weir("list", "-a")
        assert re.search(r" : [0-9a-f]{32} : word_count \(FINISHED\)", listed.stdout), listed.stdout
    finally:
        stop_and_check_nothing_left(cluster, pid)


# --- the master process itself ----------------------------------------------------------


@pytest.mark.parametrize(
    "signum",
    [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.long)],
    ids=["SIGINT", "SIGTERM"],
)
def test_master_process_stops_gracefully_on_a_signal(tmp_path: Path, signum: int) -> None:
    # SparkContext installs a SIGINT handler of its own; the master's must win over it.
    # The signal goes to the master's whole process group, as Ctrl-C in a terminal or
    # systemd's stop sends it: the driver's JVM ignores it and is stopped by the master,
    # in order, with nothing on stderr but log lines. A TaskManager is leased, so the
    # master has a Spark job in flight that a JVM gone first would fail under it.
    cluster = WeirCluster(tmp_path, "local[1]", extra_conf={"resourcemanager.taskmanager.min": "1"})
    out = tmp_path / "master.out"
    with out.open("w") as stdout, (tmp_path / "master.err").open("w") as stderr:
        master = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "weir.client.master_process",
                "--config-dir",
                str(cluster.conf_dir),
                "--port",
                "0",
            ],
            stdout=stdout,
            stderr=stderr,
            env=cluster.env(),
            cwd=REPO,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: (
                "registered" in (tmp_path / "master.err").read_text() or master.poll() is not None
            ),
            120,
            "the master's TaskManager to register",
        )
        assert master.poll() is None, (tmp_path / "master.err").read_text()
        family = process_family(master.pid)
        os.killpg(master.pid, signum)
        assert master.wait(timeout=120) == 0, (tmp_path / "master.err").read_text()
        errors = (tmp_path / "master.err").read_text()
        for sign in ("Traceback", "Exception", " ERROR ", "JVM had stopped already"):
            assert sign not in errors, errors
        wait_until(
            lambda: not [p for p in family if is_alive(p)],
            30,
            "the Spark driver to exit after the master",
        )
    finally:
        if master.poll() is None:
            master.kill()
            master.wait()


# --- chaos on Spark standalone ----------------------------------------------------------

RUNNING_SUM = Path(__file__).parent / "jobs" / "running_sum_to_files.py"


def _completed(checkpoints: Path) -> int:
    """The number of the latest checkpoint whose metadata is written (0: none)."""
    return max((int(p.parent.name[4:]) for p in checkpoints.glob("*/chk-*/_metadata")), default=0)


def _latest_checkpoint(checkpoints: Path) -> int:
    return max((int(p.name[4:]) for p in checkpoints.glob("*/chk-*")), default=0)


@pytest.mark.spark
@pytest.mark.long
def test_chaos_on_a_spark_standalone_cluster(spark_standalone, tmp_path: Path) -> None:
    """Three SIGKILLs of TaskManagers' Python workers at random moments (seeded, logged)
    during a `weir run` job: the committed output is the failure-free output exactly."""
    seed = int(os.environ.get("WEIR_CHAOS_SEED", time.time_ns() % 2**32))
    print(f"chaos seed: {seed} (WEIR_CHAOS_SEED={seed} replays it)")
    rng = random.Random(seed)
    # Heartbeats as in the MiniCluster tests, so a lost TaskManager is noticed in seconds.
    cluster = WeirCluster(
        tmp_path / "weir",
        spark_standalone.master_url,
        extra_conf={"heartbeat.interval": "500 ms", "heartbeat.timeout": "6 s"},
    )
    pid = start(cluster, "--taskmanagers", "2")
    out, checkpoints, records = tmp_path / "out", tmp_path / "checkpoints", 20_000
    try:
        result = cluster.weir(
            "run",
            "-d",
            str(RUNNING_SUM),
            "--output",
            str(out),
            "--checkpoints",
            str(checkpoints),
            "--records",
            str(records),
        )
        assert result.returncode == 0, cluster.explain(result)
        match = JOB_ID.search(result.stdout)
        assert match, result.stdout
        job_id = match.group(1)
        with DispatcherGateway(cluster.address, security=cluster.security()) as gateway:
            attempt = 0
            for _ in range(3):
                target = _latest_checkpoint(checkpoints) + rng.randint(1, 6)
                wait_until(
                    lambda t=target: _latest_checkpoint(checkpoints) >= t,
                    JOB_TIMEOUT_S,
                    f"checkpoint {target}",
                    interval_s=0.05,
                )
                details = gateway.job_details(job_id)
                assert details.status == "RUNNING", details
                hosts = sorted({t.resource_id for t in details.tasks if t.state == "RUNNING"})
                victim_id = rng.choice(hosts)
                (victim,) = [
                    tm for tm in gateway.list_task_managers() if tm.resource_id == victim_id
                ]
                os.kill(victim.pid, signal.SIGKILL)
                attempt += 1

                def running_again(a=attempt) -> bool:
                    d = gateway.job_details(job_id)
                    return d.status == "RUNNING" and all(
                        t.state == "RUNNING" and t.attempt_number >= a for t in d.tasks
                    )

                wait_until(
                    running_again, JOB_TIMEOUT_S, f"attempt {attempt} to run", interval_s=0.05
                )
            wait_until(
                lambda: gateway.job_details(job_id).status == "FINISHED",
                JOB_TIMEOUT_S,
                "the job to finish",
                interval_s=0.2,
            )
        assert committed(out) == expected_running_sums(records)
    finally:
        stop_and_check_nothing_left(cluster, pid)


# --- a master lost without high availability ---------------------------------------------


@pytest.mark.spark
# On Spark standalone the executors start first and the kill ends them: long.
@pytest.mark.parametrize("spark", ["local", pytest.param("standalone", marks=pytest.mark.long)])
def test_a_killed_master_leaves_no_task_manager_and_a_new_one_resumes_the_job(
    spark: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Without high availability the master is SIGKILLed while a checkpointed job runs:
    no TaskManager outlives it (they end with its Spark application, on a local master
    and on Spark standalone). A master started again resumes the job with `weir run -s`
    from the retained checkpoint, and the committed output is the failure-free output."""
    master_url = (
        "local[2]" if spark == "local" else request.getfixturevalue("spark_standalone").master_url
    )
    cluster = WeirCluster(
        tmp_path / "weir",
        master_url,
        extra_conf={
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"
        },
    )
    pid = start(cluster, "--taskmanagers", "2")
    out, checkpoints, records = tmp_path / "out", tmp_path / "checkpoints", 6_000
    job_args = ["--output", str(out), "--checkpoints", str(checkpoints), "--records", str(records)]
    submitted = cluster.weir("run", "-d", str(RUNNING_SUM), *job_args)
    assert submitted.returncode == 0, cluster.explain(submitted)
    job_id = JOB_ID.search(submitted.stdout).group(1)
    target = random.randint(1, 4)
    print(f"killing the master after checkpoint {target}")
    wait_until(lambda: _completed(checkpoints) >= target, JOB_TIMEOUT_S, "checkpoints")
    with DispatcherGateway(cluster.address, security=cluster.security()) as gateway:
        assert gateway.job_details(job_id).status == "RUNNING", "the job ended before the kill"
        task_managers = [tm.pid for tm in gateway.list_task_managers()]
    assert len(task_managers) == 2, task_managers
    family = process_family(pid)

    os.kill(pid, signal.SIGKILL)
    wait_until(
        lambda: not [p for p in task_managers if is_alive(p)],
        JOB_TIMEOUT_S,
        "the dead master's TaskManagers to end",
    )
    wait_until(
        lambda: not [p for p in family if is_alive(p)],
        JOB_TIMEOUT_S,
        "the dead master's Spark driver to end",
    )

    # The retained checkpoint: the latest one whose metadata was written.
    latest = checkpoints / job_id / f"chk-{_completed(checkpoints)}"
    assert not out.exists() or committed(out) != expected_running_sums(records)
    pid = start(cluster, "--taskmanagers", "2")
    try:
        resumed = cluster.weir("run", "-s", str(latest), str(RUNNING_SUM), *job_args)
        assert resumed.returncode == 0, cluster.explain(resumed)
        assert committed(out) == expected_running_sums(records)
    finally:
        stop_and_check_nothing_left(cluster, pid)
