"""Fixtures for whole-system tests: a Spark standalone master and worker on 127.0.0.1,
started from pyspark's own scripts (the pip package has no start-master.sh).

Readiness is polled from the master's JSON status with deadlines."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cluster_harness import PYTHON, SPARK_HOME, SPARK_READY_TIMEOUT_S, free_port, wait_until


@dataclass
class SparkStandalone:
    master_url: str
    webui_url: str
    env: dict[str, str]


def _spark_daemon(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [str(SPARK_HOME / "sbin" / "spark-daemon.sh"), *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _alive_workers(webui_url: str) -> int:
    try:
        with urllib.request.urlopen(f"{webui_url}/json/", timeout=5) as reply:
            state = json.load(reply)
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return -1
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    """A Spark standalone master and one worker (2 cores, 2 GB) on 127.0.0.1."""
    with _standalone(tmp_path_factory.mktemp("spark"), cores=2) as spark:
        yield spark


@pytest.fixture(scope="module")
def spark_standalone_with_a_spare_core(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SparkStandalone]:
    """A Spark standalone master and one worker of 3 cores on 127.0.0.1: room for one
    TaskManager more than a job of parallelism 2 holds, as a cluster usually has."""
    with _standalone(tmp_path_factory.mktemp("spark-spare"), cores=3) as spark:
        yield spark


@contextlib.contextmanager
def _standalone(root: Path, cores: int) -> Iterator[SparkStandalone]:
    """A master and one worker of ``cores`` cores, their files under ``root``; both
    stopped at the end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(root / "log"),
        SPARK_PID_DIR=str(root / "pid"),
        SPARK_WORKER_DIR=str(root / "work"),
        SPARK_IDENT_STRING="weir-e2e",
        # The executors' Python workers run the interpreter that has Weir installed.
        PYSPARK_PYTHON=PYTHON,
        PYSPARK_DRIVER_PYTHON=PYTHON,
    )
    port, webui, worker_webui = free_port(), free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    webui_url = f"http://127.0.0.1:{webui}"
    master_class = "org.apache.spark.deploy.master.Master"
    worker_class = "org.apache.spark.deploy.worker.Worker"
    _spark_daemon(
        env,
        "start",
        master_class,
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--webui-port",
        str(webui),
    )
    try:
        wait_until(
            lambda: _alive_workers(webui_url) >= 0,
            SPARK_READY_TIMEOUT_S,
            f"the Spark master's web UI at {webui_url}",
        )
        _spark_daemon(
            env,
            "start",
            worker_class,
            "1",
            master_url,
            "--host",
            "127.0.0.1",
            "--cores",
            str(cores),
            "--memory",
            "2g",
            "--webui-port",
            str(worker_webui),
        )
        wait_until(
            lambda: _alive_workers(webui_url) >= 1,
            SPARK_READY_TIMEOUT_S,
            f"a worker to register with {master_url}",
        )
        yield SparkStandalone(master_url, webui_url, env)
    finally:
        for cls in (worker_class, master_class):
            try:
                _spark_daemon(env, "stop", cls, "1")
            except subprocess.CalledProcessError as exc:
                print(f"stopping {cls} failed: {exc.stderr}", file=sys.stderr)
