"""Running a Python job file that came over REST (``POST /jobs``, the dashboard's
``/jars/{id}/run``) as ``weir run -d`` would: in an interpreter of its own, so its
imports and any failure stay out of the master process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weir.rest.errors import RestHandlerError

__all__ = ["JobFileRun", "plan_job_file", "run_job_file"]

# How long a submitted job file may take to build and submit its job.
_SUBMIT_TIMEOUT_S = 120.0
_JOB_ID = re.compile(r"\b([0-9a-f]{32})\b")


@dataclass(frozen=True, slots=True)
class JobFileRun:
    """How to run a job file: its arguments and ``weir run``'s options."""

    args: Sequence[str] = ()
    parallelism: int | None = None
    savepoint_path: str = ""
    allow_non_restored_state: bool = False


def _run(command: list[str], path: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=_SUBMIT_TIMEOUT_S,
            cwd=path.parent,
            check=False,
        )
    except subprocess.TimeoutExpired:
        msg = f"{path.name} did not submit a job within {_SUBMIT_TIMEOUT_S:.0f} s"
        raise RestHandlerError(msg, 400) from None


def _options(run: JobFileRun) -> list[str]:
    options = []
    if run.parallelism is not None:
        options += ["-p", str(run.parallelism)]
    if run.savepoint_path:
        options += ["-s", run.savepoint_path]
    if run.allow_non_restored_state:
        options.append("--allowNonRestoredState")
    return options


def run_job_file(dispatcher_address: str, path: Path, run: JobFileRun) -> str:
    """Submit the job the file builds; returns its job id. A file that submits no job
    (an error, no ``execute()``) is a 400 with what it printed."""
    command = [
        sys.executable,
        "-m",
        "weir.client.cli",
        "run",
        "-d",
        "--jobmanager",
        dispatcher_address,
        *_options(run),
        str(path),
        *run.args,
    ]
    done = _run(command, path)
    found = _JOB_ID.findall(done.stdout)
    if done.returncode != 0 or not found:
        tail = (done.stderr or done.stdout).strip()[-4000:]
        msg = f"{path.name} did not submit a job (exit code {done.returncode}): {tail}"
        raise RestHandlerError(msg, 400)
    return found[-1]


def plan_job_file(path: Path, run: JobFileRun) -> dict[str, Any]:
    """The plan of the job the file builds, without running it, as ``/jobs/{id}/plan``
    shows a job's (``weir info``'s plan, whose nodes are numbered, keyed by vertex id)."""
    command = [sys.executable, "-m", "weir.client.cli", "info"]
    if run.parallelism is not None:
        command += ["-p", str(run.parallelism)]
    done = _run([*command, str(path), *run.args], path)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-4000:]
        msg = f"{path.name} did not build a job (exit code {done.returncode}): {tail}"
        raise RestHandlerError(msg, 400)
    plan = json.loads(done.stdout)
    ids = {
        n["id"]: (n["operators"][0]["id"] if n.get("operators") else str(n["id"]))
        for n in plan["nodes"]
    }
    nodes = []
    for n in plan["nodes"]:
        node: dict[str, Any] = {
            "id": ids[n["id"]],
            "parallelism": n["parallelism"],
            "maxParallelism": n.get("max_parallelism", -1),
            "operator": "",
            "operator_strategy": "",
            "description": n["contents"],
            "optimizer_properties": {},
        }
        inputs = [
            {
                "num": num,
                "id": ids[p["id"]],
                "ship_strategy": p.get("ship_strategy", "FORWARD"),
                "exchange": "pipelined_bounded",
            }
            for num, p in enumerate(n.get("predecessors", []))
        ]
        if inputs:
            node["inputs"] = inputs
        nodes.append(node)
    return {"jid": plan["jid"], "name": plan["name"], "type": "STREAMING", "nodes": nodes}
