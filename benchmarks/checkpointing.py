"""`make bench`: checkpointing costs on a MiniCluster of two local TaskManagers.

- keyed-count throughput with checkpoints every second vs without (and how many
  checkpoints completed during the run, counted from their ``_metadata`` files);
- checkpoint end-to-end duration (trigger to completion, from ``_metadata``) with about
  10 MB and 100 MB of keyed state;
- recovery time from SIGKILLing a TaskManager's Spark Python worker to every task of the
  job RUNNING again on restored state.

Figures are reported, not asserted.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import CountingSink, steady_rate

from weir.client.dispatcher_client import DispatcherGateway
from weir.client.mini_cluster import MiniCluster
from weir.common import Configuration, Types, WatermarkStrategy
from weir.core.checkpoint import decode_metadata
from weir.core.executor import register_executor
from weir.datastream import ExternalizedCheckpointRetention, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

CLUSTER_CONFIG = {
    "spark.master": "local[2]",
    "resourcemanager.taskmanager.max": "2",
    # Short heartbeats, as in the cluster tests, so a lost TaskManager is noticed quickly.
    "heartbeat.interval": "500 ms",
    "heartbeat.timeout": "6 s",
    "slot.request.timeout": "60 s",
}
KEYS = 10_000
# Polling, not waiting on a condition variable: the job runs in other processes.
POLL_S = 0.02


def _env(checkpoint_dir: str | None, interval_ms: int, retained: int = 3):
    configuration = Configuration()
    configuration.set_string("execution.checkpointing.num-retained", str(retained))
    configuration.set_string("restart-strategy.type", "fixed-delay")
    configuration.set_string("restart-strategy.fixed-delay.attempts", "10")
    configuration.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    if checkpoint_dir is not None:
        env.enable_checkpointing(interval_ms)
        config = env.get_checkpoint_config()
        config.set_checkpoint_storage_dir(f"file://{checkpoint_dir}")
        config.set_externalized_checkpoint_retention(
            ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
        )
    return env


def _checkpoints(checkpoint_dir: str) -> list:
    return [
        decode_metadata(p.read_bytes())
        for p in pathlib.Path(checkpoint_dir).glob("*/chk-*/_metadata")
    ]


def keyed_count(n: int, checkpointing: bool) -> tuple[float, int]:
    """Events/s of a keyed count over NumberSequenceSource; completed checkpoints."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as tmp:
        stats_dir = os.path.join(tmp, "stats")
        os.mkdir(stats_dir)
        checkpoint_dir = os.path.join(tmp, "checkpoints") if checkpointing else None
        # Every checkpoint retained, so the run's checkpoints can be counted afterwards.
        env = _env(checkpoint_dir, 1000, retained=10_000)
        (
            env.from_source(
                NumberSequenceSource(0, n - 1), WatermarkStrategy.no_watermarks(), "numbers"
            )
            .map(lambda x: (x % KEYS, 1))
            .key_by(lambda kv: kv[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .add_sink(CountingSink(stats_dir))
        )
        env.execute(f"bench-keyed-count-{'ckpt' if checkpointing else 'off'}")
        rate = steady_rate(stats_dir, n)
        completed = 0
        if checkpoint_dir is not None:
            completed = len(_checkpoints(checkpoint_dir))
        return rate, completed


def checkpoint_duration(keys: int, value_bytes: int, gateway: DispatcherGateway):
    """(state bytes, [end-to-end ms]) of checkpoints taken once every key holds a value
    of ``value_bytes``; the job is cancelled after three such checkpoints."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as tmp:
        checkpoint_dir = os.path.join(tmp, "checkpoints")
        env = _env(checkpoint_dir, 2000)
        env.get_checkpoint_config().set_checkpoint_timeout(120_000)
        payload = value_bytes
        (
            env.from_source(
                NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
            )
            .map(lambda x: (x % keys, os.urandom(payload // 2).hex()))
            .key_by(lambda kv: kv[0])
            .reduce(lambda a, b: b)
            .filter(lambda kv: False)
            .add_sink(lambda kv: None)
        )
        client = env.execute_async(f"bench-state-{keys * value_bytes // 2**20}MB")
        target = keys * value_bytes * 0.9
        full: list = []
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and len(full) < 3:
            full = [m for m in _checkpoints(checkpoint_dir) if m.state_size >= target]
            time.sleep(POLL_S * 10)
        gateway.cancel_job(str(client.get_job_id()))
        durations = [m.completion_timestamp_ms - m.trigger_timestamp_ms for m in full]
        size = max((m.state_size for m in full), default=0)
        return size, durations


def recovery_time(gateway: DispatcherGateway) -> float:
    """Seconds from SIGKILLing a TaskManager running the job to every task of the next
    attempt RUNNING (deployed with the latest checkpoint's state)."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as tmp:
        checkpoint_dir = os.path.join(tmp, "checkpoints")
        env = _env(checkpoint_dir, 200)
        (
            env.from_source(
                NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
            )
            .map(lambda x: (x % KEYS, 1))
            .key_by(lambda kv: kv[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .map(lambda kv: kv[1], output_type=Types.LONG())
            .add_sink(lambda kv: None)
        )
        client = env.execute_async("bench-recovery")
        job_id = str(client.get_job_id())

        def running(attempt: int):
            details = gateway.job_details(job_id)
            ok = (
                details.status == "RUNNING"
                and details.tasks
                and all(t.state == "RUNNING" and t.attempt_number >= attempt for t in details.tasks)
            )
            return details.tasks if ok else None

        def poll(condition, timeout: float = 120.0):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                value = condition()
                if value:
                    return value
                time.sleep(POLL_S)
            msg = f"timed out; the job: {gateway.job_details(job_id)}"
            raise TimeoutError(msg)

        tasks = poll(lambda: running(0) and _checkpoints(checkpoint_dir) and running(0))
        victim_id = tasks[0].resource_id
        (victim,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == victim_id]
        killed = time.monotonic()
        os.kill(victim.pid, signal.SIGKILL)
        poll(lambda: running(1))
        seconds = time.monotonic() - killed
        gateway.cancel_job(job_id)
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keyed-events", type=int, default=8_000_000)
    args = parser.parse_args()
    with MiniCluster(CLUSTER_CONFIG) as cluster, DispatcherGateway(cluster.address) as gateway:
        register_executor(cluster.executor())
        # A warm-up job first (the first job on fresh TaskManagers is slower), then
        # alternating runs, best of three each: on this 2-core machine single runs of
        # the same job vary by ±20 %. Enough events for several seconds of steady state,
        # so checkpoints complete.
        keyed_count(args.keyed_events, checkpointing=False)
        offs, ons = [], []
        for _ in range(3):
            offs.append(keyed_count(args.keyed_events, checkpointing=False)[0])
            ons.append(keyed_count(args.keyed_events, checkpointing=True))
        off = max(offs)
        on, completed = max(ons)
        runs_off = ", ".join(f"{r:,.0f}" for r in offs)
        runs_on = ", ".join(f"{r:,.0f}" for r, _ in ons)
        print(
            f"keyed count p=2, checkpointing off:  {off:>12,.0f} events/s   (runs: {runs_off})",
            flush=True,
        )
        print(
            f"keyed count p=2, checkpoints every 1 s: {on:>9,.0f} events/s "
            f"({(on - off) / off:+.1%}; {completed} checkpoints completed; runs: {runs_on})",
            flush=True,
        )
        print(
            f"recovery from a TaskManager kill to RUNNING: {recovery_time(gateway):.2f} s",
            flush=True,
        )
        for keys, value_bytes in ((10_000, 1_000), (100_000, 1_000)):
            size, durations = checkpoint_duration(keys, value_bytes, gateway)
            print(
                f"checkpoint of {size / 2**20:6.1f} MiB keyed state: end-to-end "
                f"{', '.join(f'{d} ms' for d in durations)}",
                flush=True,
            )
        register_executor(None)


if __name__ == "__main__":
    main()
