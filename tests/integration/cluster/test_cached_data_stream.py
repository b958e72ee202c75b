"""DataStream.cache() on the MiniCluster: the first job that computes a cached stream keeps
its result in the cache directory, later jobs read it instead of computing it again (with
the records' timestamps and parallelism), invalidate() and env.close() release it, and a
cache found incomplete is computed again."""

from __future__ import annotations

import os

import pytest

from weir.common import Configuration, Types, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from weir.datastream.functions import ProcessFunction

pytestmark = pytest.mark.spark


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class WithTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield value[0], ctx.timestamp()


def _env(tmp_path, parallelism=2):
    config = Configuration()
    config.set_string("execution.cache.dir", str(tmp_path / "caches"))
    # The cache is written in parts, one per subtask: the job's parallelism everywhere, not
    # the parallelism BATCH mode decides from the (small) volume.
    config.set_string("execution.batch.adaptive.auto-parallelism.enabled", "false")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(parallelism)
    return env


def _computed(log):
    return sorted(int(line) for line in log.read_text().split()) if log.exists() else []


def test_later_jobs_read_the_cache_until_it_is_invalidated(cluster, tmp_path):
    log = tmp_path / "computed.log"

    def expensive(value):
        with open(log, "a") as out:
            out.write(f"{value[0]}\n")
        return value

    env = _env(tmp_path)
    data = [(i, 1000 + i) for i in range(20)]
    cached = (
        env.from_collection(data, type_info=Types.TUPLE([Types.INT(), Types.LONG()]))
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
        )
        .rebalance()
        .map(expensive, output_type=Types.TUPLE([Types.INT(), Types.LONG()]))
        .cache()
    )
    first = sorted(cached.process(WithTimestamp()).execute_and_collect())
    assert first == [(i, 1000 + i) for i in range(20)]
    assert _computed(log) == list(range(20))
    parts = sorted(
        os.listdir(next((tmp_path / "caches").iterdir()) / cached._transformation.cache.cache_id)
    )
    assert parts == ["part-0-of-2", "part-1-of-2"]

    # Read, not computed: the records come back with their timestamps.
    second = sorted(cached.process(WithTimestamp()).execute_and_collect())
    assert second == first
    doubled = sorted(cached.map(lambda v: v[0] * 2).execute_and_collect())
    assert doubled == [2 * i for i in range(20)]
    assert _computed(log) == list(range(20))

    cached.invalidate()
    assert sorted(cached.map(lambda v: v[0]).execute_and_collect()) == list(range(20))
    assert _computed(log) == sorted(list(range(20)) * 2)

    env.close()
    assert not any((tmp_path / "caches").iterdir())


def test_a_cache_that_lost_a_part_is_computed_again(cluster, tmp_path):
    log = tmp_path / "computed.log"

    def expensive(value):
        with open(log, "a") as out:
            out.write(f"{value}\n")
        return value

    env = _env(tmp_path)
    cached = (
        env.from_collection(list(range(10)), type_info=Types.INT())
        .rebalance()
        .map(expensive, output_type=Types.INT())
        .cache()
    )
    assert sorted(cached.execute_and_collect()) == list(range(10))
    directory = tmp_path / "caches"
    (part,) = [p for p in directory.rglob("part-1-of-2")]
    part.unlink()  # as if the storage lost it
    assert sorted(cached.execute_and_collect()) == list(range(10))
    assert _computed(log) == sorted(list(range(10)) * 2)
    assert sorted(cached.execute_and_collect()) == list(range(10))  # complete again: read
    assert _computed(log) == sorted(list(range(10)) * 2)
    env.close()


def test_cache_needs_batch_mode(tmp_path):
    env = _env(tmp_path)
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    cached = env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: x).cache()
    cached.print()
    with pytest.raises(ValueError, match="BATCH execution mode only"):
        env.get_execution_plan()
