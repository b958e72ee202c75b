"""Flink's operator-scope metrics: each operator of a chain reports its own numRecordsIn and
numRecordsOut (and watermarks) in the TaskManager's Prometheus exposition, as
``flink_taskmanager_job_task_operator_*`` with the operator's name and id as labels."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_checkpoint_recovery import await_condition

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import SinkFunction, SourceFunction

pytestmark = pytest.mark.spark

RECORDS = 100
KEPT = sum(1 for x in range(1, RECORDS + 1) if (x * 2) % 3 == 0)
OPERATOR = "flink_taskmanager_job_task_operator_"
WATERMARK = 5000


class NumbersThenIdle(SourceFunction):
    """1..RECORDS and a watermark after them (which sends the last batch on), then nothing
    until cancelled: the job keeps running, and reporting."""

    def __init__(self) -> None:
        self.running = True

    def run(self, ctx) -> None:
        for x in range(1, RECORDS + 1):
            ctx.collect(x)
        ctx.emit_watermark(WATERMARK)
        while self.running:
            time.sleep(0.05)  # idle until cancel(); nothing is awaited here

    def cancel(self) -> None:
        self.running = False


class Discard(SinkFunction):
    def invoke(self, value, context) -> None:
        pass


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def _operator_values(addresses: list[str], job_id: str) -> dict[tuple[str, str], Any]:
    """``(operator_name, metric)`` -> value, for the job's operators, from a real GET of
    every TaskManager's Prometheus endpoint; ``(operator_name, "host")`` -> its host label."""
    values: dict[tuple[str, str], Any] = {}
    for address in addresses:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            if not family.name.startswith(OPERATOR):
                continue
            for sample in family.samples:
                if sample.labels.get("job_id") == job_id:
                    name = family.name.removeprefix(OPERATOR)
                    values[(sample.labels["operator_name"], name)] = sample.value
                    values[(sample.labels["operator_name"], "host")] = sample.labels["host"]
    return values


def test_each_operator_of_a_chain_counts_its_own_records(cluster) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    (
        env.add_source(NumbersThenIdle(), "numbers", Types.LONG())
        .map(lambda x: x * 2, Types.LONG())
        .name("double")
        .filter(lambda x: x % 3 == 0)
        .name("thirds")
        .add_sink(Discard())
        .name("discard")
    )
    client = env.execute_async("operator metrics")
    job_id = str(client.get_job_id())
    try:
        plan = _get(f"{cluster.rest_url}/jobs/{job_id}")
        assert len(plan["vertices"]) == 1, "the four operators should be one chain"

        def all_counted():
            # Asked each time: the job's TaskManager may still be registering.
            addresses = [
                tm["prometheusAddress"]
                for tm in _get(f"{cluster.rest_url}/taskmanagers")["taskmanagers"]
                if tm.get("prometheusAddress")
            ]
            values = _operator_values(addresses, job_id)
            done = values.get(("Sink: discard", "currentInputWatermark")) == WATERMARK
            return values if done else None

        values = await_condition(all_counted, "the source's watermark to reach the sink")
        source, sink = "Source: numbers", "Sink: discard"
        assert values[(source, "numRecordsOut")] == RECORDS
        assert values[(source, "numRecordsIn")] == RECORDS  # a source's read records
        assert values[("double", "numRecordsIn")] == RECORDS
        assert values[("double", "numRecordsOut")] == RECORDS
        assert values[("thirds", "numRecordsIn")] == RECORDS
        assert values[("thirds", "numRecordsOut")] == KEPT
        assert values[("thirds", "numRecordsIn")] - values[("thirds", "numRecordsOut")] == (
            RECORDS - KEPT
        )
        assert values[(sink, "numRecordsOut")] == 0
        for operator in (source, "double", "thirds", sink):
            assert (operator, "numRecordsInPerSecond") in values
            assert (operator, "numRecordsOutPerSecond") in values
            assert values[(operator, "currentOutputWatermark")] == WATERMARK
        for operator in ("double", "thirds", sink):
            assert values[(operator, "currentInputWatermark")] == WATERMARK
        # The TaskManager's address, as Flink's host variable is its host.
        assert {values[(op, "host")] for op in (source, "double", "thirds", sink)} == {"127.0.0.1"}
    finally:
        client.cancel().result()
