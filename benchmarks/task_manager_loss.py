"""One TaskManager lost: a checkpointed job of parallelism 2 runs on two TaskManagers of a
cluster with room for a third (start-cluster.sh on Spark ``local[3]``, TaskManagers leased
on demand as on YARN), one TaskManager's process is SIGKILLed, and the master's log says

* leases:    how many TaskManagers the ResourceManager leased after the kill (one is
             the lost one's replacement; more is waste),
* restarts:  how many times the job restarted before it ran again,
* running:   seconds from the kill until every task of the restarted job is RUNNING.

    .venv/bin/python benchmarks/task_manager_loss.py [--runs 3] [--spark-master local[3]]

A fresh cluster per run. Timestamps come from the master's log (millisecond resolution),
the kill's from this process's clock. The machine's load average is printed with each
run: on a shared machine it moves the figures more than anything the master does.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]

from cluster_harness import WeirCluster  # noqa: E402
from master_log import leases, logged_at  # noqa: E402

from weir.client.dispatcher_client import DispatcherGateway  # noqa: E402

RUNNING_SUM = REPO / "tests" / "e2e" / "jobs" / "running_sum_to_files.py"
JOB_ID = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")
# A generous bound for each wait: a loaded machine takes minutes where an idle one
# takes seconds; the figures say which it was.
_WAIT_S = 300


def _wait(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            msg = f"timed out after {_WAIT_S} s waiting for {what}"
            raise TimeoutError(msg)
        time.sleep(0.05)  # polling interval; the condition decides


def _all_running(gateway: DispatcherGateway, job_id: str, attempt: int) -> bool:
    details = gateway.job_details(job_id)
    return (
        details.status == "RUNNING"
        and bool(details.tasks)
        and all(t.state == "RUNNING" and t.attempt_number >= attempt for t in details.tasks)
    )


def one_run(spark_master: str, keep: Path | None) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="weir-tm-loss-bench-"))
    cluster = WeirCluster(
        root / "weir",
        spark_master,
        extra_conf={"heartbeat.interval": "500 ms", "heartbeat.timeout": "6 s"},
        tls=False,
    )
    try:
        started = cluster.start()
        if started.returncode != 0:
            raise SystemExit(cluster.explain(started))
        submitted = cluster.weir(
            "run", "-d", str(RUNNING_SUM), "--output", str(root / "out"),
            "--checkpoints", str(root / "chk"), "--records", "200000",
        )  # fmt: skip
        match = JOB_ID.search(submitted.stdout)
        if match is None:
            raise SystemExit(cluster.explain(submitted))
        job_id = match.group(1)
        with DispatcherGateway(cluster.address, security=cluster.security()) as gateway:
            _wait(lambda: _all_running(gateway, job_id, 0), "the job to run")
            _wait(
                lambda: gateway.checkpoint_statistics(job_id).num_completed >= 1,
                "a checkpoint",
            )
            before = len(leases(cluster.log_text()))
            victim = gateway.list_task_managers()[0]
            killed = time.time()
            os.kill(victim.pid, signal.SIGKILL)
            _wait(lambda: _all_running(gateway, job_id, 1), "every task RUNNING again")
            restarts = max(t.attempt_number for t in gateway.job_details(job_id).tasks)
            text = cluster.log_text()
            running = logged_at(text, rf"every task of attempt {restarts} is RUNNING", killed)
            gateway.cancel_job(job_id)
        return {
            "leases": len(leases(text)) - before,
            "restarts": restarts,
            "running": (running or float("nan")) - killed,
        }
    finally:
        cluster.stop()
        if keep is not None:
            shutil.copytree(root, keep / root.name, ignore=shutil.ignore_patterns("out", "chk"))
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--spark-master", default="local[3]")
    parser.add_argument("--keep", type=Path, help="copy each run's conf and logs here")
    args = parser.parse_args()
    runs = []
    for _ in range(args.runs):
        load = os.getloadavg()[0]
        runs.append(one_run(args.spark_master, args.keep))
        figures = ", ".join(
            f"{k} {v:g}" if k != "running" else f"{k} {v:.1f} s" for k, v in runs[-1].items()
        )
        print(f"  load {load:.1f}: {figures}", flush=True)
    print(
        f"{args.runs} runs on {args.spark_master}: leases "
        f"{sorted(int(r['leases']) for r in runs)}, restarts "
        f"{sorted(int(r['restarts']) for r in runs)}, kill to every task RUNNING: median "
        f"{statistics.median(r['running'] for r in runs):.1f} s "
        f"(max {max(r['running'] for r in runs):.1f})",
        flush=True,
    )


if __name__ == "__main__":
    main()
