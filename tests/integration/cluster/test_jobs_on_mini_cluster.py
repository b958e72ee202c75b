"""Whole jobs on the MiniCluster: real services, TaskManagers in Spark executors."""

from __future__ import annotations

import collections
import os

import pytest

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark

LINES = [f"the quick brown fox {i % 7} jumps over the lazy dog {i % 13}" for i in range(300)]


def _word_count(parallelism: int) -> dict[str, int]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    counts = (
        env.from_collection(LINES, type_info=Types.STRING())
        .flat_map(lambda line: line.split(), output_type=Types.STRING())
        .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    final: dict[str, int] = {}
    with counts.execute_and_collect() as results:
        for word, count in results:
            assert count == final.get(word, 0) + 1  # running counts arrive in order per key
            final[word] = count
    return final


@pytest.mark.parametrize("parallelism", [1, 2])
def test_word_count_equals_a_plain_python_count(cluster, parallelism):
    expected = collections.Counter(word for line in LINES for word in line.split())
    assert _word_count(parallelism) == dict(expected)


def test_user_functions_run_inside_spark_tasks(cluster):
    def where(x):
        from pyspark import TaskContext

        context = TaskContext.get()
        return (x, context is not None, os.getpid(), context.partitionId() if context else -1)

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    rows = list(env.from_collection(list(range(100))).rebalance().map(where).execute_and_collect())
    assert sorted(r[0] for r in rows) == list(range(100))
    assert all(r[1] for r in rows), "a user function ran outside a Spark task"
    assert os.getpid() not in {r[2] for r in rows}
    assert len({r[2] for r in rows}) == 2  # two TaskManagers, two Spark Python workers


def test_keyed_state_is_per_key_across_subtasks(cluster):
    from weir.datastream.functions import KeyedProcessFunction
    from weir.datastream.state import ValueStateDescriptor

    class Count(KeyedProcessFunction):
        def open(self, runtime_context):
            self.state = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

        def process_element(self, value, ctx):
            n = (self.state.value() or 0) + 1
            self.state.update(n)
            yield ctx.get_current_key(), n

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    data = [i % 10 for i in range(1000)]
    out = list(env.from_collection(data).key_by(lambda x: x).process(Count()).execute_and_collect())
    finals: dict[int, int] = {}
    for key, n in out:
        finals[key] = max(finals.get(key, 0), n)
    assert finals == {k: 100 for k in range(10)}
    assert len(out) == 1000


def test_execute_runs_a_job_with_a_sink_and_returns_its_result(cluster, tmp_path):
    target = tmp_path / "out"
    target.mkdir()

    def write(value):
        with open(target / f"{os.getpid()}.txt", "a") as out:
            out.write(f"{value}\n")

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(list(range(50))).map(lambda x: x * 2).add_sink(write)
    result = env.execute("sink job")
    assert result.get_job_id()
    written = sorted(int(line) for f in target.iterdir() for line in f.read_text().split())
    assert written == [x * 2 for x in range(50)]


def test_print_reaches_the_client_stdout(cluster, capfd):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection(["alpha", "beta"]).map(lambda s: s.upper()).print()
    env.execute("print job")
    out = capfd.readouterr().out
    assert "ALPHA\n" in out and "BETA\n" in out


def test_execute_and_collect_with_limit_returns_a_list(cluster):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    from weir.common import WatermarkStrategy
    from weir.datastream.connectors.number_seq import NumberSequenceSource

    ds = env.from_source(
        NumberSequenceSource(1, 10_000_000), WatermarkStrategy.no_watermarks(), "seq"
    )
    first = ds.execute_and_collect(limit=5)
    assert first == [1, 2, 3, 4, 5]


def test_batch_mode_emits_only_the_final_value_per_key(cluster):
    from weir.datastream import RuntimeExecutionMode

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    words = [w for line in LINES for w in line.split()]
    out = list(
        env.from_collection(words)
        .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .sum(1)
        .execute_and_collect()
    )
    assert sorted(out) == sorted(collections.Counter(words).items())


def test_read_text_file_reads_every_line_in_order(cluster, tmp_path):
    path = tmp_path / "input.txt"
    path.write_text("".join(f"{line}\n" for line in LINES[:50]), encoding="utf-8")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    assert list(env.read_text_file(str(path)).execute_and_collect()) == LINES[:50]


def test_connected_keyed_streams_process_with_shared_state(cluster):
    from weir.datastream.functions import KeyedCoProcessFunction
    from weir.datastream.state import ValueStateDescriptor

    class Enrich(KeyedCoProcessFunction):
        """Tags each click (input 2) with its user's name (input 1); clicks that arrive
        before the name wait in keyed state, so the result does not depend on arrival."""

        def open(self, runtime_context):
            self.name = runtime_context.get_state(ValueStateDescriptor("name", Types.STRING()))
            self.waiting = runtime_context.get_state(
                ValueStateDescriptor("waiting", Types.PICKLED_BYTE_ARRAY())
            )

        def process_element1(self, user, ctx):
            self.name.update(user[1])
            for page in self.waiting.value() or []:
                yield ctx.get_current_key(), page, user[1]
            self.waiting.clear()

        def process_element2(self, click, ctx):
            name = self.name.value()
            if name is None:
                self.waiting.update([*(self.waiting.value() or []), click[1]])
                return None
            return [(ctx.get_current_key(), click[1], name)]

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    users = env.from_collection([(i, f"user-{i}") for i in range(10)])
    clicks = env.from_collection([(i % 10, f"page-{i}") for i in range(40)])
    out = list(
        users.connect(clicks)
        .key_by(lambda u: u[0], lambda c: c[0])
        .process(Enrich())
        .execute_and_collect()
    )
    assert sorted(out) == sorted((i % 10, f"page-{i}", f"user-{i % 10}") for i in range(40))
