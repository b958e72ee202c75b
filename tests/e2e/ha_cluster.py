"""An HA cluster of master processes for the end-to-end tests and the failover benchmark:
a conf dir of its own on a given ZooKeeper quorum, masters started directly or by
start-cluster.sh (each leads its own process group), the checkpointed running-sum job
whose exactly-once FileSink output is known in advance, and the log reading the tests
wait on."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml
from cluster_harness import PYTHON, REPO, free_port, is_alive, wait_until
from netns import Host

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
    """A master process: started directly (``process``) or by start-cluster.sh (then
    known by its pid file only). Either way it leads its own process group."""

    pid: int
    log: Path
    port: int
    process: subprocess.Popen[str] | None = None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @property
    def leading(self) -> bool:
        return "Weir master ready" in self.text()

    def dispatcher_address(self) -> str:
        """Where its Dispatcher serves since it last became leader (from its log)."""
        found = re.findall(r"Weir master ready: Dispatcher at (\S+)", self.text())
        assert found, "this master has not led yet"
        return str(found[-1])

    def signal(self, signum: int) -> None:
        os.killpg(self.pid, signum)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()
        wait_until(lambda: not is_alive(self.pid), 30, f"master {self.pid} to die")


class HaCluster:
    def __init__(self, root: Path, quorum: str, **overrides: str) -> None:
        """``overrides``: more keys of weir-conf.yaml, over the defaults below."""
        self.root = root
        self.conf_dir = root / "conf"
        self.conf_dir.mkdir(parents=True)
        self.pid_dir = root / "pid"
        self.log_dir = root / "log"
        conf = {
            "jobmanager.bind-host": "127.0.0.1",
            "taskmanager.host": "127.0.0.1",
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "env.log.dir": str(self.log_dir),
            "env.pid.dir": str(self.pid_dir),
            "high-availability.type": "zookeeper",
            "high-availability.zookeeper.quorum": quorum,
            "high-availability.cluster-id": f"e2e-{uuid.uuid4().hex[:8]}",
            "high-availability.storageDir": f"file://{root}/ha",
            "high-availability.zookeeper.client.session-timeout": "2 s",
            # Fast failovers want the short session; on a loaded machine a ZooKeeper server
            # or master that stalls for a second then suspends connections, which by
            # default (false) hands leadership over. The scenarios here are about other
            # failures; a test about suspended connections sets its own value.
            "high-availability.zookeeper.client.tolerate-suspended-connections": "true",
            "high-availability.zookeeper.client.connection-timeout": "5 s",
            "high-availability.zookeeper.client.retry-wait": "200 ms",
            # Masters on one host need REST ports of their own: a paused leader still
            # holds its socket when the standby takes over.
            "rest.port": "0",
            **overrides,
        }
        self.conf = conf
        (self.conf_dir / "weir-conf.yaml").write_text(yaml.safe_dump(conf))
        self.masters: list[Master] = []
        self.scripted = False

    def env(self) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("WEIR_", "PYSPARK_", "SPARK_"))
        }
        env.update(WEIR_CONF_DIR=str(self.conf_dir), WEIR_PYTHON=PYTHON)
        return env

    def script(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(REPO / "deploy" / "bin" / name), *args],
            env=self.env(),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=2 * MASTER_START_S,
        )

    def start_scripted(self, count: int) -> list[Master]:
        """A ``masters`` file of ``count`` lines and start-cluster.sh: the first leads."""
        ports = [free_port() for _ in range(count)]
        (self.conf_dir / "masters").write_text(
            "# the leader first\n" + "".join(f"127.0.0.1:{port}\n" for port in ports)
        )
        started = self.script("start-cluster.sh")
        assert started.returncode == 0, started.stdout + started.stderr
        self.scripted = True
        host = socket.gethostname()
        files = [("weir-master.pid", f"weir-master-{host}.log")] + [
            (f"weir-master-standby-{i}.pid", f"weir-master-{host}-standby-{i}.log")
            for i in range(1, count)
        ]
        for (pid_file, log_file), port in zip(files, ports, strict=True):
            pid = int((self.pid_dir / pid_file).read_text())
            self.masters.append(Master(pid, self.log_dir / log_file, port))
        return self.masters

    def start_master(
        self, host: Host | None = None, *, port: int | None = None, **settings: str
    ) -> Master:
        """A master on this machine's loopback, or inside ``host`` bound to its address;
        ``port`` its Dispatcher's (default: one free now; 0: any free when it leads, which
        ``Master.dispatcher_address`` reads back); ``settings``
        (``**{"key.name": value}``): keys of its own over the cluster's."""
        port = free_port() if port is None else port
        log = self.root / f"master-{port or uuid.uuid4().hex[:8]}.log"
        argv = [PYTHON, "-m", "weir.client.master_process", "--config-dir", str(self.conf_dir)]
        argv += ["--port", str(port)]
        for key, value in settings.items():
            argv += ["--set", f"{key}={value}"]
        if host is not None:
            argv = host.command([*argv, "--host", host.address])
        process = subprocess.Popen(
            argv,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            env=self.env(),
            cwd=REPO,
            text=True,
            start_new_session=True,
        )
        master = Master(process.pid, log, port, process)
        self.masters.append(master)
        return master

    def weir(
        self, *args: str, timeout: float = 120, host: Host | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The ``weir`` command line, here or inside ``host``."""
        argv = [PYTHON, "-m", "weir.client.cli", *args]
        return subprocess.run(
            host.command(argv) if host is not None else argv,
            env=self.env(),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def stop(self) -> subprocess.CompletedProcess[str] | None:
        for master in self.masters:
            if is_alive(master.pid):
                master.signal(signal.SIGCONT)  # a paused one must be able to stop
        if self.scripted:
            return self.script("stop-cluster.sh")
        for master in self.masters:
            if is_alive(master.pid):
                master.signal(signal.SIGTERM)
        for master in self.masters:
            if master.process is not None:
                try:
                    master.process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    master.signal(signal.SIGKILL)
                    master.process.wait()
        return None


def submit(
    cluster: HaCluster,
    records: int,
    host: Host | None = None,
    interval_ms: int = 200,
    checkpoint_dir: bool = True,
) -> tuple[Path, Path]:
    """Run the running-sum job detached (from ``host`` if given), checkpointing every
    ``interval_ms`` (without ``checkpoint_dir``, into the JobMaster's storage); its
    output and checkpoint directories."""
    out, checkpoints = cluster.root / "out", cluster.root / "chk"
    storage = ["--checkpoints", str(checkpoints)] if checkpoint_dir else []
    submitted = cluster.weir(
        "run",
        "-d",
        str(RUNNING_SUM),
        "--output",
        str(out),
        *storage,
        "--records",
        str(records),
        "--interval",
        str(interval_ms),
        host=host,
    )
    assert submitted.returncode == 0, submitted.stderr
    return out, checkpoints


def completed_checkpoints(log_text: str) -> int:
    return len(re.findall(r"checkpoint \d+ completed", log_text))


def leader_and_standby(cluster: HaCluster, **leader_settings: str) -> tuple[Master, Master]:
    first = cluster.start_master(**leader_settings)
    wait_until(lambda: first.leading, MASTER_START_S, "the first master to lead")
    second = cluster.start_master()
    wait_until(lambda: "standby" in second.text(), MASTER_START_S, "the second master's standby")
    assert not second.leading
    return first, second
