"""Queryable state on the embedded MiniCluster: latency of one query (client -> proxy ->
JobMaster location -> TaskManager -> the task's mailbox and back), and what a client
querying as fast as it can costs the job it reads (records/s of a keyed count at p=2
with no queries, then while one client queries in a loop).

    python benchmarks/queryable_state.py [--seconds S] [--rounds N]

The job's record count is read through the state itself: the sum of the per-key counts.
"""

from __future__ import annotations

import argparse
import statistics
import time

from weir.client.mini_cluster import MiniCluster
from weir.common import Configuration, Types, WatermarkStrategy
from weir.core.errors import QueryableStateError
from weir.core.executor import register_executor
from weir.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.state import ValueStateDescriptor
from weir.queryablestate import QueryableStateClient

KEYS = [f"k{i}" for i in range(8)]
DESCRIPTOR = ValueStateDescriptor("count", Types.LONG())


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        descriptor = ValueStateDescriptor("count", Types.LONG())
        descriptor.set_queryable("count-by-key")
        self.count = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)


def _count(client: QueryableStateClient, job_id: str, key: str) -> int:
    future = client.get_kv_state(job_id, "count-by-key", key, Types.STRING(), DESCRIPTOR)
    try:
        return future.result().value()
    except QueryableStateError:
        return 0


def _total(client: QueryableStateClient, job_id: str) -> int:
    return sum(_count(client, job_id, key) for key in KEYS)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    config = {
        "queryable-state.enable": "true",
        "queryable-state.proxy.ports": "0",
        "queryable-state.server.ports": "0",
        "spark.master": "local[4]",
    }
    with MiniCluster(config) as cluster:
        register_executor(cluster.executor())
        env = StreamExecutionEnvironment.get_execution_environment(Configuration())
        env.set_parallelism(2)
        env.from_source(
            NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
        ).key_by(lambda n: KEYS[n % len(KEYS)], key_type=Types.STRING()).process(CountPerKey())
        job = env.execute_async("queryable state benchmark")
        register_executor(None)
        job_id = str(job.get_job_id())
        host, port = cluster.queryable_state_proxy_address.rsplit(":", 1)
        with QueryableStateClient(host, int(port)) as client:
            while not all(_count(client, job_id, key) for key in KEYS):
                time.sleep(0.2)  # deploying: not a measurement
            time.sleep(3.0)  # let the job reach its steady rate before measuring

            # Alternate the two phases: the machine's load drifts, and one pair of
            # phases would compare the drift rather than the queries.
            quiet_rates: list[float] = []
            queried_rates: list[float] = []
            latencies: list[float] = []
            for _ in range(args.rounds):
                start, t0 = _total(client, job_id), time.perf_counter()
                time.sleep(args.seconds)
                quiet_rates.append((_total(client, job_id) - start) / (time.perf_counter() - t0))

                start, t0 = _total(client, job_id), time.perf_counter()
                deadline = t0 + args.seconds
                while time.perf_counter() < deadline:
                    q0 = time.perf_counter()
                    _count(client, job_id, KEYS[len(latencies) % len(KEYS)])
                    latencies.append(time.perf_counter() - q0)
                queried_rates.append((_total(client, job_id) - start) / (time.perf_counter() - t0))
        job.cancel().result()

    latencies.sort()
    ms = [x * 1000 for x in latencies]
    print(f"queries: {len(ms)}, {len(ms) / sum(latencies):.0f}/s from one client")
    print(
        f"latency ms: p50 {statistics.median(ms):.2f}  p90 {ms[int(len(ms) * 0.9)]:.2f}  "
        f"p99 {ms[int(len(ms) * 0.99)]:.2f}  max {ms[-1]:.2f}"
    )
    quiet, queried = statistics.median(quiet_rates), statistics.median(queried_rates)
    print(f"job records/s without queries, per round: {[round(r) for r in quiet_rates]}")
    print(f"job records/s while queried, per round:   {[round(r) for r in queried_rates]}")
    print(
        f"medians: {quiet:,.0f} without, {queried:,.0f} while queried "
        f"({100 * queried / quiet:.1f} %)"
    )


if __name__ == "__main__":
    main()
