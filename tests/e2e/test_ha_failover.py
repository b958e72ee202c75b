"""Master failover under ZooKeeper high availability, with real processes: two masters
(each with its own Spark application on local[2]) against a real ZooKeeper server; the
leader is SIGKILLed while a checkpointed job writes through the exactly-once FileSink, the
standby wins, recovers the job from its stored graph and latest checkpoint, and the
committed output is exactly the failure-free output."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cluster_harness import PYTHON, REPO, free_port, is_alive, wait_until

RUNNING_SUM = Path(__file__).parent / "jobs" / "running_sum_to_files.py"
MASTER_START_S = 120
JOB_S = 240


def expected_running_sums(records: int, keys: int = 4) -> Counter[str]:
    lines: Counter[str] = Counter()
    sums = [0] * keys
    for value in range(records):
        sums[value % keys] += value + 1
        lines[f"{value % keys},{sums[value % keys]}"] += 1
    return lines


def committed(out: Path) -> Counter[str]:
    lines: Counter[str] = Counter()
    for path in out.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            lines.update(path.read_text().splitlines())
    return lines


def latest_checkpoint(checkpoints: Path) -> int:
    return max((int(p.parent.name[4:]) for p in checkpoints.glob("*/chk-*/_metadata")), default=0)


@dataclass
class Master:
    process: subprocess.Popen[str]
    log: Path
    port: int

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def leading(self) -> bool:
        return "Weir master ready" in self.text()


class HaCluster:
    def __init__(self, root: Path, quorum: str) -> None:
        self.root = root
        self.conf_dir = root / "conf"
        self.conf_dir.mkdir(parents=True)
        conf = {
            "jobmanager.bind-host": "127.0.0.1",
            "taskmanager.host": "127.0.0.1",
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "env.log.dir": str(root / "log"),
            "high-availability.type": "zookeeper",
            "high-availability.zookeeper.quorum": quorum,
            "high-availability.cluster-id": f"e2e-{uuid.uuid4().hex[:8]}",
            "high-availability.storageDir": f"file://{root}/ha",
            "high-availability.zookeeper.client.session-timeout": "2 s",
            "high-availability.zookeeper.client.connection-timeout": "5 s",
            "high-availability.zookeeper.client.retry-wait": "200 ms",
        }
        (self.conf_dir / "weir-conf.yaml").write_text(yaml.safe_dump(conf))
        self.masters: list[Master] = []

    def env(self) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("WEIR_", "PYSPARK_", "SPARK_"))
        }
        env.update(WEIR_CONF_DIR=str(self.conf_dir))
        return env

    def start_master(self) -> Master:
        port = free_port()
        log = self.root / f"master-{port}.log"
        process = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "weir.client.master_process",
                "--config-dir",
                str(self.conf_dir),
                "--port",
                str(port),
            ],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            env=self.env(),
            cwd=REPO,
            text=True,
            start_new_session=True,
        )
        master = Master(process, log, port)
        self.masters.append(master)
        return master

    def weir(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PYTHON, "-m", "weir.client.cli", *args],
            env=self.env(),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def stop(self) -> None:
        for master in self.masters:
            if master.process.poll() is None:
                os.killpg(master.process.pid, signal.SIGTERM)
        for master in self.masters:
            try:
                master.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(master.process.pid, signal.SIGKILL)
                master.process.wait()


@pytest.fixture
def ha_cluster(zookeeper: object, tmp_path: Path):
    cluster = HaCluster(tmp_path, zookeeper.address)  # type: ignore[attr-defined]
    yield cluster
    cluster.stop()


def run_and_kill_leader(cluster: HaCluster, records: int, rng: random.Random) -> dict[str, float]:
    first = cluster.start_master()
    wait_until(lambda: first.leading, MASTER_START_S, "the first master to lead")
    second = cluster.start_master()
    wait_until(lambda: "standby" in second.text(), MASTER_START_S, "the second master's standby")
    assert not second.leading

    out, checkpoints = cluster.root / "out", cluster.root / "chk"
    submitted = cluster.weir(
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
    assert submitted.returncode == 0, submitted.stderr
    # Kill after a random number of completed checkpoints, while the job runs.
    kill_after = rng.randint(1, 4)
    wait_until(
        lambda: latest_checkpoint(checkpoints) >= kill_after, JOB_S, "checkpoints before the kill"
    )
    killed_at = time.monotonic()
    os.killpg(first.process.pid, signal.SIGKILL)
    first.process.wait()
    wait_until(lambda: second.leading, MASTER_START_S, "the standby to take over")
    wait_until(lambda: "recovering from checkpoint" in second.text(), JOB_S, "the job's recovery")
    recovered_at = time.monotonic()
    listed = cluster.weir("list", "-a")
    assert listed.returncode == 0, listed.stderr
    wait_until(
        lambda: (
            committed(out) == expected_running_sums(records) or "reached FINISHED" in second.text()
        ),
        JOB_S,
        "the recovered job to finish",
    )
    wait_until(lambda: "reached FINISHED" in second.text(), JOB_S, "the job to be FINISHED")
    assert committed(out) == expected_running_sums(records)
    return {"kill_after_checkpoint": kill_after, "recovery_s": recovered_at - killed_at}


@pytest.mark.spark
def test_a_standby_takes_over_a_sigkilled_leader_with_exactly_once_output(ha_cluster: HaCluster):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    figures = run_and_kill_leader(ha_cluster, 6_000, random.Random(seed))
    print(f"failover figures: {figures}")
    assert is_alive(ha_cluster.masters[1].process.pid)
