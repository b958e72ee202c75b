"""Whole Tasks on the in-memory network: chains, keyed state, co-operators, fan-out."""

from __future__ import annotations

from collections import Counter

import pytest
from task_testing import (
    Deployment,
    ListSource,
    Recorder,
    TestingNetworkEnvironment,
    chain,
    collect_op,
    op,
    run_tasks,
    source_op,
    vertex,
)

from weir.common.watermark_strategy import (
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)
from weir.core.deployment import ExecutionState
from weir.core.job_graph import OperatorDescriptor, OperatorKind, PartitionerKind
from weir.core.watermarks import Watermark
from weir.taskmanager.task import Task, TaskServices

K = OperatorKind


class MapFunction:
    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0

    def open(self, runtime_context):
        self.ctx = runtime_context

    def map(self, value):
        return value * 10


class CountPerKey:
    """KeyedProcessFunction counting records per key with a ValueState."""

    def open(self, runtime_context):
        class Descriptor:
            name = "count"

        self.count = runtime_context.get_state(Descriptor())

    def process_element(self, value, ctx):
        c = (self.count.value() or 0) + 1
        self.count.update(c)
        yield ctx.get_current_key(), c


class GeneratorProcess:
    def process_element(self, value, ctx):
        assert ctx.timestamp() == -(1 << 63)  # no timestamp: Long.MIN_VALUE, as PyFlink
        if value % 2:
            yield value
            yield -value


class ReturningProcess:
    def process_element(self, value, ctx):
        if value == 3:
            return None
        return [value, value]


def _single(*ops: OperatorDescriptor, **kwargs) -> tuple[Deployment, OperatorDescriptor]:
    linked = chain(*ops)
    return Deployment([vertex(linked, **kwargs)]), linked[-1]


class TestOneInputChains:
    def test_map_filter_flat_map_chain_delivers_in_order(self):
        d, sink = _single(
            source_op(list(range(10)), batch=3),
            op(K.MAP, {"function": MapFunction()}),
            op(K.FILTER, {"function": lambda x: x % 20}),  # truthy ints pass, 0 does not
            op(K.FLAT_MAP, {"function": lambda x: (x, x + 1)}),
            collect_op(),
        )
        tasks, rec = run_tasks(d)
        assert tasks[0].execution_state is ExecutionState.FINISHED
        expected = [y for x in range(10) if (x * 10) % 20 for y in (x * 10, x * 10 + 1)]
        assert rec.records(sink) == expected
        assert rec.states[tasks[0].tdd.execution_attempt_id] == [
            ExecutionState.INITIALIZING,
            ExecutionState.RUNNING,
            ExecutionState.FINISHED,
        ]

    def test_flat_map_accepts_generator_functions(self):
        def gen(x):
            yield from range(x)

        d, sink = _single(source_op([1, 2, 3]), op(K.FLAT_MAP, {"function": gen}), collect_op())
        _, rec = run_tasks(d)
        assert rec.records(sink) == [0, 0, 1, 0, 1, 2]

    def test_process_function_may_yield_return_a_list_or_return_none(self):
        d, sink = _single(
            source_op([1, 2, 3, 4]),
            op(K.PROCESS, {"function": GeneratorProcess()}),
            op(K.PROCESS, {"function": ReturningProcess()}),
            collect_op(),
        )
        _, rec = run_tasks(d)
        assert rec.records(sink) == [1, 1, -1, -1, -3, -3]

    def test_collect_ends_with_an_end_of_data_call(self):
        d, sink = _single(source_op(list(range(5))), collect_op())
        _, rec = run_tasks(d)
        assert rec.collect_calls[-1] == (sink.operator_id, 0, 0, True)
        assert [c[3] for c in rec.collect_calls[:-1]] == [False] * (len(rec.collect_calls) - 1)

    def test_fan_out_hands_each_output_the_same_records(self):
        a, b = collect_op(), collect_op()
        mapper = op(K.MAP, {"function": lambda x: x + 1}, outputs=[a.operator_id, b.operator_id])
        src = op(K.SOURCE, {"source": ListSource([1, 2, 3])}, outputs=[mapper.operator_id])
        d = Deployment([vertex([src, mapper, a, b])])
        _, rec = run_tasks(d)
        assert rec.records(a) == [2, 3, 4]
        assert rec.records(b) == [2, 3, 4]

    def test_sink_function_invoke_and_open_close_once(self, tmp_path):
        out = tmp_path / "sink.txt"

        class FileSink:
            def open(self, runtime_context):
                self.f = open(out, "w")
                self.opens = getattr(self, "opens", 0) + 1

            def invoke(self, value, context):
                assert context.timestamp() is None
                self.f.write(f"{value}\n")

            def close(self):
                self.f.write("closed\n")
                self.f.close()

        d, _ = _single(source_op([1, 2], batch=1), op(K.SINK, {"function": FileSink()}))
        run_tasks(d)
        assert out.read_text() == "1\n2\nclosed\n"

    def test_runtime_context_describes_the_subtask(self):
        class Probe:
            def open(self, ctx):
                self.info = (
                    ctx.get_index_of_this_subtask(),
                    ctx.get_number_of_parallel_subtasks(),
                    ctx.get_max_number_of_parallel_subtasks(),
                    ctx.get_task_name(),
                    ctx.get_task_name_with_subtasks(),
                    ctx.get_attempt_number(),
                    ctx.get_job_parameter("k", "d"),
                    ctx.get_job_parameter("x", "d"),
                )

            def map(self, v):
                return self.info

        d, sink = _single(
            source_op([1, 2]),
            op(K.MAP, {"function": Probe()}),
            collect_op(),
            parallelism=2,
            max_parallelism=64,
            name="Map",
        )
        d.parameters["k"] = "v"
        _, rec = run_tasks(d)
        assert sorted(rec.records(sink)) == [
            (0, 2, 64, "Map", "Map (1/2)#0", 0, "v", "d"),
            (1, 2, 64, "Map", "Map (2/2)#0", 0, "v", "d"),
        ]


class TestKeyedOperators:
    def test_reduce_emits_the_running_value_per_key(self):
        records = [("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20)]
        d, sink = _single(
            source_op(records, batch=2),
            op(
                K.REDUCE,
                {"function": lambda x, y: (x[0], x[1] + y[1]), "key_selectors": [lambda r: r[0]]},
            ),
            collect_op(),
        )
        _, rec = run_tasks(d)
        assert rec.records(sink) == [("a", 1), ("b", 10), ("a", 3), ("a", 6), ("b", 30)]

    def test_value_state_counts_across_a_key_group_edge(self):
        words = [f"w{i % 7}" for i in range(200)]
        src = vertex([source_op(words, batch=16)], parallelism=2, name="src")
        counter = chain(
            op(K.KEYED_PROCESS, {"function": CountPerKey(), "key_selectors": [lambda w: w]}),
            collect_op(),
        )
        keyed = vertex(counter, parallelism=2, name="count")
        d = Deployment([src, keyed])
        d.connect(src, keyed, PartitionerKind.KEY_GROUP, {"key_selector": lambda w: w})
        tasks, rec = run_tasks(d)
        assert all(t.execution_state is ExecutionState.FINISHED for t in tasks)
        finals: dict[str, int] = {}
        owners: dict[str, set[int]] = {}
        for (oid, sub), recs in rec.collected.items():
            assert oid == counter[-1].operator_id
            for key, count in recs:
                finals[key] = max(finals.get(key, 0), count)
                owners.setdefault(key, set()).add(sub)
        assert finals == dict(Counter(words))
        assert all(len(s) == 1 for s in owners.values())

    def test_keyed_map_sees_state_of_its_key(self):
        class Seen:
            def open(self, ctx):
                class D:
                    name = "seen"

                self.seen = ctx.get_state(D())

            def map(self, v):
                first = self.seen.value() is None
                self.seen.update(True)
                return v, first

        d, sink = _single(
            source_op([1, 2, 1, 3, 2]),
            op(K.MAP, {"function": Seen(), "key_selectors": [lambda v: v]}),
            collect_op(),
        )
        _, rec = run_tasks(d)
        assert rec.records(sink) == [(1, True), (2, True), (1, False), (3, True), (2, False)]


class TestTwoInputOperators:
    def test_co_map_takes_each_input_through_its_own_method(self):
        class CoMap:
            def map1(self, v):
                return f"L{v}"

            def map2(self, v):
                return f"R{v}"

        left = vertex([source_op([1, 2, 3])], name="left")
        right = vertex([source_op([4, 5])], name="right")
        sink = collect_op()
        co = vertex(chain(op(K.CO_MAP, {"function": CoMap()}, input_count=2), sink), name="co")
        d = Deployment([left, right, co])
        d.connect(left, co, PartitionerKind.FORWARD, input_index=0)
        d.connect(right, co, PartitionerKind.FORWARD, input_index=1)
        _, rec = run_tasks(d)
        got = rec.records(sink)
        assert [x for x in got if x[0] == "L"] == ["L1", "L2", "L3"]
        assert sorted(x for x in got if x[0] == "R") == ["R4", "R5"]

    def test_keyed_co_flat_map_uses_each_inputs_key_selector(self):
        class Join:
            def open(self, ctx):
                class D:
                    name = "left"

                self.left = ctx.get_state(D())

            def flat_map1(self, v):
                self.left.update(v)
                return []

            def flat_map2(self, v):
                seen = self.left.value()
                yield (v[0], seen, v[1])

        left = vertex([source_op([("a", 1), ("b", 2)])], name="left")
        sink = collect_op()
        co = vertex(
            chain(
                op(
                    K.CO_FLAT_MAP,
                    {"function": Join(), "key_selectors": [lambda r: r[0], lambda r: r[0]]},
                    input_count=2,
                ),
                sink,
            ),
            name="co",
        )
        right = vertex([source_op([("a", "x"), ("c", "y")])], name="right")
        d = Deployment([left, right, co])
        d.connect(left, co, PartitionerKind.FORWARD, input_index=0)
        d.connect(right, co, PartitionerKind.FORWARD, input_index=1)
        # feed the right side only after the left one ended: run the left first
        env, rec = TestingNetworkEnvironment(), Recorder()
        run_tasks(d, env, rec, only=[left])
        run_tasks(d, env, rec, only=[right, co])
        assert sorted(rec.records(sink), key=str) == [("a", ("a", 1), "x"), ("c", None, "y")]


# --- bundles (python.fn-execution.bundle.size) ---------------------------------------------

BUNDLE_LOG: list = []
MAP_TASKS: dict = {}


class RecordingReader:
    """Polled for ``max_records``; remembers every request."""

    def __init__(self, records: list) -> None:
        self.records = list(records)
        self.requests: list[int] = []

    def poll_batch(self, max_records: int):
        self.requests.append(max_records)
        BUNDLE_LOG.append(("poll", max_records))
        if not self.records:
            return None
        out, self.records = self.records[:max_records], self.records[max_records:]
        return out

    def close(self) -> None:
        pass


class RecordingSource:
    def __init__(self, records: list) -> None:
        self.records = records

    def create_reader(self, context):
        return RecordingReader(self.records)


def log_and_ask_the_mailbox(value):
    """Logs each record; the first one queues a mailbox action of the map's own task."""
    if value == 0:
        MAP_TASKS["map"].mailbox.put(lambda: BUNDLE_LOG.append("mailbox"))
    BUNDLE_LOG.append(value)
    return value


class TestBundles:
    def test_a_source_polls_at_most_the_bundle_size(self):
        BUNDLE_LOG.clear()
        d, sink = _single(
            op(K.SOURCE, {"source": RecordingSource(list(range(7)))}),
            collect_op(),
        )
        d.config["python.fn-execution.bundle.size"] = "3"
        _, rec = run_tasks(d)
        assert rec.records(sink) == list(range(7))
        assert [n for what, n in BUNDLE_LOG] == [3, 3, 3, 3]

    def test_a_network_buffer_larger_than_the_bundle_is_processed_a_bundle_at_a_time(self):
        """The mailbox is served between two bundles of one buffer, not only after it."""
        BUNDLE_LOG.clear()
        src = vertex([source_op(list(range(6)))], name="src")
        mapped = chain(op(K.MAP, {"function": log_and_ask_the_mailbox}), collect_op())
        d = Deployment([src, vertex(mapped, name="map")])
        d.connect(src, d.vertices[1], PartitionerKind.FORWARD)
        d.config["python.fn-execution.bundle.size"] = "2"
        env, recorder = TestingNetworkEnvironment(), Recorder()
        services = TaskServices(env, recorder.report_state, recorder.collect)
        # The source's six records leave in one buffer (they fit, and nothing flushes
        # before the source ends).
        tasks = [Task(d.tdd(v), services) for v in d.vertices]
        MAP_TASKS["map"] = tasks[1]
        for t in tasks:
            t.start()
        assert all(t.join(30) for t in tasks)
        assert len(env.partitions[next(iter(env.partitions))].emitted) == 1
        assert recorder.records(mapped[-1]) == list(range(6))
        assert BUNDLE_LOG == [0, 1, "mailbox", 2, 3, 4, 5]


class StatefulConcat:
    """A reduce function with state of its own: how many merges its key has seen."""

    def open(self, ctx):
        class Descriptor:
            name = "merges"

        self.merges = ctx.get_state(Descriptor())

    def reduce(self, a, b):
        merges = (self.merges.value() or 0) + 1
        self.merges.update(merges)
        return (a[0] + b[0], a[1], merges)


class TestBatchReduce:
    def test_the_function_sees_the_state_of_its_key_and_list_keys_work(self):
        records = [("a", [0], 0), ("c", [1], 0), ("d", [1], 0), ("b", [0], 0), ("e", [1], 0)]
        d, sink = _single(
            source_op(records),
            op(
                K.REDUCE,
                {"function": StatefulConcat(), "key_selectors": [lambda r: r[1]]},
            ),
            collect_op(),
        )
        d.config["execution.runtime-mode"] = "BATCH"
        _, rec = run_tasks(d)
        assert sorted(rec.records(sink)) == [("ab", [0], 1), ("cde", [1], 2)]


class TraceKeys:
    """A KeyedProcessFunction noting, with a counter of its own, the order of its records
    and timers, and what state each sees."""

    def open(self, ctx):
        class Descriptor:
            name = "seen"

        self.seen = ctx.get_state(Descriptor())
        self.n = 0

    def process_element(self, value, ctx):
        self.n += 1
        seen = (self.seen.value() or ()) + (value[1],)
        self.seen.update(seen)
        ctx.timer_service().register_event_time_timer(1000)
        yield self.n, ctx.get_current_key(), seen, ctx.timer_service().current_watermark()

    def on_timer(self, timestamp, ctx):
        self.n += 1
        yield self.n, ctx.get_current_key(), "timer", self.seen.value()


class TestBatchSortedInput:
    def test_a_keyed_input_comes_sorted_by_key_with_its_timers_at_each_key_end(self):
        records = [(k, i) for i, k in enumerate([3, 1, 2, 1, 3, 2, 1])]
        src = vertex([source_op(records, batch=2)], parallelism=2, name="src")
        keyed = chain(
            op(K.KEYED_PROCESS, {"function": TraceKeys(), "key_selectors": [lambda r: r[0]]}),
            collect_op(),
        )
        target = vertex(keyed, parallelism=1, name="trace")
        d = Deployment([src, target])
        d.connect(src, target, PartitionerKind.KEY_GROUP, {"key_selector": lambda r: r[0]})
        d.config["execution.runtime-mode"] = "BATCH"
        tasks, rec = run_tasks(d)
        assert all(t.execution_state is ExecutionState.FINISHED for t in tasks)
        out = rec.records(keyed[-1])
        # Pickled ints order by their bytes: 1, 2, 3 (one byte each). Within a key the
        # records have no timestamps: arrival order, whichever source subtask sent them.
        keys = [r[1] for r in out]
        assert keys == [1, 1, 1, 1, 2, 2, 2, 3, 3, 3]
        assert [r[0] for r in out] == list(range(1, 11))
        timers = [r for r in out if r[2] == "timer"]
        assert [(t[1], sorted(t[3])) for t in timers] == [(1, [1, 3, 6]), (2, [2, 5]), (3, [0, 4])]
        assert all(r[3] == -(1 << 63) for r in out if r[2] != "timer")  # no watermark yet
        backend = next(t for t in tasks if t.tdd.vertex.name == "trace").chain.head.setup
        tables = backend.keyed_state_backend._tables
        assert tables and not any(tables.values())  # each key's state dropped at its end


class BatchTypes:
    """A batch sink (``invoke_batch``) that keeps each batch's type and its records."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.records: list = []

    def invoke_batch(self, batch, context):
        self.kinds.append(type(batch).__name__)
        self.records.extend(batch)


SINKS: dict = {}


class RememberedSink(BatchTypes):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def __getstate__(self):
        return {"name": self.name}

    def __setstate__(self, state):
        BatchTypes.__init__(self)
        self.name = state["name"]
        SINKS[state["name"]] = self


class TestColumnarSources:
    """A source whose reader can give columns gives them when what follows reads them,
    and its records, unchanged, otherwise."""

    def _number_source(self, outputs):
        from weir.datastream.connectors.number_seq import NumberSequenceSource

        return op(K.SOURCE, {"source": NumberSequenceSource(1, 2500)}, outputs=outputs)

    def test_a_batch_sink_after_a_number_sequence_gets_columns(self):
        SINKS.clear()
        sink = op(K.SINK, {"function": RememberedSink("columns")})
        src = self._number_source([sink.operator_id])
        run_tasks(Deployment([vertex([src, sink])]))
        got = SINKS["columns"]
        assert set(got.kinds) == {"ColumnBatch"}
        assert got.records == list(range(1, 2501))
        assert {type(x) for x in got.records} == {int}

    def test_a_per_record_map_after_a_number_sequence_gets_plain_ints(self):
        out = collect_op()
        mapper = op(K.MAP, {"function": lambda x: (x, type(x).__name__)}, outputs=[out.operator_id])
        src = self._number_source([mapper.operator_id])
        _, rec = run_tasks(Deployment([vertex([src, mapper, out])]))
        assert rec.records(out) == [(x, "int") for x in range(1, 2501)]

    def test_a_map_and_a_batch_sink_side_by_side_see_the_same_records(self):
        SINKS.clear()
        sink = op(K.SINK, {"function": RememberedSink("both")})
        out = collect_op()
        mapper = op(K.MAP, {"function": lambda x: (x, type(x).__name__)}, outputs=[out.operator_id])
        src = self._number_source([mapper.operator_id, sink.operator_id])
        _, rec = run_tasks(Deployment([vertex([src, mapper, out, sink])]))
        assert rec.records(out) == [(x, "int") for x in SINKS["both"].records]
        assert SINKS["both"].records == list(range(1, 2501))
        assert set(SINKS["both"].kinds) == {"ColumnBatch"}

    def _stamped(self, outputs, generator):
        strategy = generator(WatermarkStrategy).with_timestamp_assigner(FieldStamp())
        return op(
            K.TIMESTAMPS_WATERMARKS,
            {"watermark_strategy": strategy._snapshot()},
            outputs=outputs,
        )

    @pytest.mark.parametrize(
        "generator",
        [
            lambda w: w.for_monotonous_timestamps(),
            lambda w: w.for_generator(EveryRecord),
        ],
        ids=["batches", "record by record"],
    )
    def test_columns_cross_assign_timestamps_and_watermarks_to_a_batch_sink(self, generator):
        SINKS.clear()
        sink = op(K.SINK, {"function": RememberedSink("stamped")})
        stamps = self._stamped([sink.operator_id], generator)
        src = self._number_source([stamps.operator_id])
        run_tasks(Deployment([vertex([src, stamps, sink])]))
        got = SINKS["stamped"]
        assert set(got.kinds) == {"ColumnBatch"}
        assert got.records == list(range(1, 2501))

    def test_a_per_record_map_after_assign_timestamps_gets_plain_ints(self):
        out = collect_op()
        mapper = op(K.MAP, {"function": lambda x: (x, type(x).__name__)}, outputs=[out.operator_id])
        stamps = self._stamped([mapper.operator_id], lambda w: w.for_monotonous_timestamps())
        src = self._number_source([stamps.operator_id])
        _, rec = run_tasks(Deployment([vertex([src, stamps, mapper, out])]))
        assert rec.records(out) == [(x, "int") for x in range(1, 2501)]


class FieldStamp(TimestampAssigner):
    """A TimestampAssigner that returns the record itself (a number sequence's value)."""

    def extract_timestamp(self, value, record_timestamp):
        return value


class EveryRecord(WatermarkGenerator):
    """A WatermarkGenerator that emits a watermark after every record."""

    def on_event(self, event, event_timestamp, output):
        output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output):
        pass
