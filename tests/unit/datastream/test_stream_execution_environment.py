from __future__ import annotations

import json
import threading

import cloudpickle
import pytest

from weir.common import Configuration, JobID, JobStatus, Row, Types, WatermarkStrategy
from weir.core.errors import JobGraphError, WeirError
from weir.core.job_graph import OperatorKind, PartitionerKind, SerializerKind
from weir.datastream import (
    CheckpointingMode,
    CoMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors import NumberSequenceSource


def payload(op):
    return cloudpickle.loads(op.payload)


def ops(graph):
    return [op for v in graph.vertices for op in v.operators]


def op_named(graph, name):
    return next(op for op in ops(graph) if op.name == name)


class TestExecute:
    def test_submits_a_valid_graph_and_returns_the_result(self, executor):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1, 2, 3]).map(lambda x: x + 1).print()
        result = env.execute("my job")
        (graph,) = executor.job_graphs
        assert graph.job_name == "my job"
        assert result.get_job_id() == graph.job_id
        assert graph.config["pipeline.name"] == "my job"
        graph.validate()

    def test_default_job_name_is_flinks(self, executor):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        env.execute()
        assert executor.job_graphs[0].job_name == "Flink Streaming Job"

    def test_execute_clears_the_transformations(self, executor):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        env.execute()
        with pytest.raises(JobGraphError, match="No operators"):
            env.execute()

    def test_execute_async_returns_a_job_client_with_futures(self, executor):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        client = env.execute_async("j")
        graph = executor.job_graphs[0]
        assert client.get_job_id() == JobID(graph.job_id)
        assert str(client.get_job_id()) == graph.job_id
        status = client.get_job_status()
        assert status.done() and status.result() is JobStatus.FINISHED
        result = client.get_job_execution_result()
        assert result.done()
        assert result.result().get_job_id() == graph.job_id
        assert client.cancel().result() is None
        assert client.get_accumulators().result() == {}
        with pytest.raises(WeirError, match="cannot take savepoints"):
            client.trigger_savepoint("file:///tmp/sp")

    def test_config_and_job_parameters(self, executor):
        config = Configuration().set_string("python.fn-execution.bundle.size", "10")
        config.set_string("python.executable", "python3")
        env = StreamExecutionEnvironment.get_execution_environment(config)
        env.set_buffer_timeout(5).set_parallelism(3).set_max_parallelism(64)
        env.get_config().set_global_job_parameters({"threshold": "7"})
        env.from_collection([1]).print()
        env.execute()
        graph = executor.job_graphs[0]
        assert graph.config["execution.buffer-timeout.interval"] == "5"
        assert graph.config["parallelism.default"] == "3"
        assert graph.config["pipeline.max-parallelism"] == "64"
        assert graph.config["python.fn-execution.bundle.size"] == "10"
        # Read back by the job's functions (the `python` environment variable), as in PyFlink.
        assert graph.config["python.executable"] == "python3"
        assert graph.job_parameters == {"threshold": "7"}

    def test_flinks_deprecated_keys_still_apply(self):
        config = Configuration()
        config.set_string("pipeline.operator-chaining", "false")
        config.set_string("execution.buffer-timeout", "1 min")
        env = StreamExecutionEnvironment.get_execution_environment(config)
        assert not env.is_chaining_enabled() and env.get_buffer_timeout() == 60_000
        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(config)
        assert not env.is_chaining_enabled() and env.get_buffer_timeout() == 60_000

    def test_configuration_sets_the_defaults(self):
        config = Configuration().set_integer("parallelism.default", 4)
        env = StreamExecutionEnvironment.get_execution_environment(config)
        assert env.get_parallelism() == 4
        assert env.get_max_parallelism() == -1
        assert env.get_buffer_timeout() == 100
        assert env.is_chaining_enabled()

    def test_unpicklable_function_names_the_operator(self, executor):
        lock = threading.Lock()
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).map(lambda x: (lock, x)).name("locky").print()
        with pytest.raises(JobGraphError, match=r"'locky'.*open\(\)"):
            env.execute()

    def test_execution_plan_has_flinks_shape(self):
        env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(2)
        env.from_collection([1]).map(lambda x: x).key_by(lambda x: x).reduce(
            lambda a, b: a + b
        ).print()
        plan = json.loads(env.get_execution_plan())
        nodes = plan["nodes"]
        assert nodes[0]["pact"] == "Data Source" and nodes[0]["parallelism"] == 1
        assert nodes[1]["predecessors"][0]["ship_strategy"] == "REBALANCE"
        assert nodes[2]["predecessors"][0]["ship_strategy"] == "HASH"
        assert nodes[-1]["pact"] == "Data Sink"
        assert set(nodes[1]) >= {"id", "type", "pact", "contents", "parallelism"}
        # the plan does not consume the program
        assert json.loads(env.get_execution_plan()) == plan


class TestExecuteAndCollect:
    def test_returns_an_iterator_over_the_collect_operator(self, executor):
        executor.collected = [1, 2, 3]
        env = StreamExecutionEnvironment.get_execution_environment()
        with env.from_collection([1, 2, 3]).execute_and_collect() as results:
            assert list(results) == [1, 2, 3]
        client = executor.clients[0]
        collect = op_named(client.job_graph, "Data stream collect sink")
        assert collect.kind is OperatorKind.COLLECT
        assert client.collect_operator_id == collect.operator_id
        assert client.iterators[0].closed

    def test_limit_returns_a_list_and_closes(self, executor):
        executor.collected = [5, 6, 7, 8]
        env = StreamExecutionEnvironment.get_execution_environment()
        result = env.from_collection([5, 6, 7, 8]).execute_and_collect(limit=2)
        assert result == [5, 6]
        assert executor.clients[0].iterators[0].closed


class _Double(MapFunction):
    def map(self, value):
        return value * 2


class _ByFirst(KeySelector):
    def get_key(self, value):
        return value[0]


class _ModPartitioner(Partitioner):
    def partition(self, key, num_partitions):
        return key % num_partitions


class _Co(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return -value


class _Counter(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def build(env):
    return env._job_graph(clear=False).job_graph


class TestOperators:
    def test_sources(self):
        env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(4)
        env.from_source(
            NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), "seq"
        ).print()
        env.from_collection([(1, "a")], type_info=Types.ROW([Types.INT(), Types.STRING()])).print()
        graph = build(env)
        seq = next(v for v in graph.vertices if v.name.startswith("Source: seq"))
        coll = next(v for v in graph.vertices if v.name.startswith("Source: Collection"))
        assert seq.parallelism == 4 and coll.parallelism == 1
        source = payload(coll.head)["source"]
        reader = source.create_reader(_Ctx(0, 1))
        (row,) = reader.poll_batch(10)
        assert row.as_dict() == {"f0": 1, "f1": "a"}
        assert reader.poll_batch(10) is None
        assert isinstance(payload(seq.head)["source"], NumberSequenceSource)

    def test_non_parallel_source_refuses_parallelism(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        with pytest.raises(ValueError, match="non parallel"):
            env.from_collection([1]).set_parallelism(2)

    def test_key_by_payloads(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        selector = _ByFirst()
        env.from_collection([(1, 2)]).key_by(selector).map(_Double()).print()
        graph = build(env)
        edge = next(e for e in graph.edges if e.partitioner is PartitionerKind.KEY_GROUP)
        ks = cloudpickle.loads(edge.partitioner_payload)["key_selector"]
        assert ks((7, 8)) == 7
        target = graph.vertex(edge.target_vertex).head
        assert target.kind is OperatorKind.MAP
        assert payload(target)["key_selectors"][0]((3, 4)) == 3

    def test_keyed_aggregations_are_reduce_operators(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        keyed = env.from_collection([("a", 1)]).key_by(lambda x: x[0])
        keyed.sum(1).print()
        keyed.min_by(1).print()
        keyed.process(_Counter()).print()
        graph = build(env)
        kinds = [op.kind for op in ops(graph)]
        assert kinds.count(OperatorKind.REDUCE) == 2
        assert OperatorKind.KEYED_PROCESS in kinds
        reduce = next(op for op in ops(graph) if op.kind is OperatorKind.REDUCE)
        assert payload(reduce)["function"].reduce(("a", 1), ("a", 2)) == ("a", 3)

    def test_keyed_stream_refuses_partitioning_and_settings(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        keyed = env.from_collection([1]).key_by(lambda x: x)
        with pytest.raises(Exception, match="Cannot override partitioning"):
            keyed.rebalance()
        with pytest.raises(Exception, match="not supported"):
            keyed.set_parallelism(2)
        with pytest.raises(TypeError):
            keyed.process(lambda x: x)

    def test_union_is_several_edges_into_one_input(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        a = env.from_collection([1])
        b = env.from_collection([2])
        c = env.from_collection([3])
        a.union(b, c).map(lambda x: x).name("m").print()
        graph = build(env)
        m = next(v for v in graph.vertices if v.head.name == "m")
        inputs = graph.inputs_of(m.vertex_id)
        assert len(inputs) == 3
        assert {e.input_index for _, e in inputs} == {0}

    def test_connect_makes_a_two_input_operator(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        a = env.from_collection([1])
        b = env.from_collection([2])
        a.connect(b).key_by(lambda x: x, lambda y: y).map(_Co()).print()
        graph = build(env)
        co = op_named(graph, "Co-Map")
        assert co.kind is OperatorKind.CO_MAP and co.input_count == 2
        vertex = next(v for v in graph.vertices if v.head is co)
        edges = graph.inputs_of(vertex.vertex_id)
        assert sorted(e.input_index for _, e in edges) == [0, 1]
        assert all(e.partitioner is PartitionerKind.KEY_GROUP for _, e in edges)
        assert len(payload(co)["key_selectors"]) == 2

    def test_partition_custom_edge(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).partition_custom(_ModPartitioner(), lambda x: x).print()
        edge = build(env).edges[0]
        assert edge.partitioner is PartitionerKind.CUSTOM
        content = cloudpickle.loads(edge.partitioner_payload)
        assert content["partitioner"](7, 4) == 3 and content["key_selector"](2) == 2

    @pytest.mark.parametrize(
        ("method", "kind"),
        [
            ("rebalance", PartitionerKind.REBALANCE),
            ("rescale", PartitionerKind.RESCALE),
            ("shuffle", PartitionerKind.SHUFFLE),
            ("broadcast", PartitionerKind.BROADCAST),
            ("global_", PartitionerKind.GLOBAL),
        ],
    )
    def test_partitioner_edges(self, method, kind):
        env = StreamExecutionEnvironment.get_execution_environment()
        getattr(env.from_collection([1]), method)().print()
        (edge,) = build(env).edges
        assert edge.partitioner is kind

    def test_edge_serializer_follows_the_upstream_type(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.from_collection([1]).map(
            lambda x: (x, "a"), output_type=Types.TUPLE([Types.INT(), Types.STRING()])
        ).rebalance().print()
        env.from_collection([1]).map(lambda x: x).rebalance().print()
        env.from_collection([1]).map(
            lambda x: Row(x), output_type=Types.ROW([Types.INT()])
        ).rebalance().print()
        kinds = [
            e.serializer for e in build(env).edges if e.partitioner is PartitionerKind.REBALANCE
        ]
        assert kinds == [SerializerKind.MARSHAL, SerializerKind.PICKLE, SerializerKind.PICKLE]

    def test_map_type_checks(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        with pytest.raises(TypeError, match="MapFunction"):
            env.from_collection([1]).map(3)


class _Ctx:
    def __init__(self, index, parallelism):
        self._index, self._parallelism = index, parallelism

    def get_index_of_this_subtask(self):
        return self._index

    def get_number_of_parallel_subtasks(self):
        return self._parallelism


class TestDefaultParallelism:
    def test_embedded_runs_default_to_one_subtask_per_core(self):
        import os

        assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == (
            os.cpu_count() or 1
        )

    def test_a_cluster_defaults_to_parallelism_default(self, executor):
        assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == 1

    @pytest.mark.parametrize("parallelism", [0, -3])
    def test_a_parallelism_below_one_is_refused(self, parallelism):
        env = StreamExecutionEnvironment.get_execution_environment()
        with pytest.raises(ValueError, match=f"at least 1, got {parallelism}"):
            env.set_parallelism(parallelism)
        with pytest.raises(ValueError, match=f"at least 1, got {parallelism}"):
            env.from_collection([1]).map(str).set_parallelism(parallelism)

    def test_the_entry_point_context_sits_under_the_program(self, executor):
        from weir.common import Configuration
        from weir.core.executor import set_context_configuration

        set_context_configuration({"parallelism.default": "3"})
        try:
            assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == 3
            conf = Configuration()
            conf.set_integer("parallelism.default", 5)
            env = StreamExecutionEnvironment.get_execution_environment(conf)
            assert env.get_parallelism() == 5
        finally:
            set_context_configuration({})


class TestRuntimeMode:
    def _mode(self, env):
        return build(env).config["execution.runtime-mode"]

    def test_streaming_by_default(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        assert self._mode(env) == "STREAMING"

    def test_automatic_is_batch_when_every_source_is_bounded(self):
        from weir.datastream import RuntimeExecutionMode
        from weir.datastream.functions import SourceFunction

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
        env.from_collection([1]).print()
        assert self._mode(env) == "BATCH"

        class Endless(SourceFunction):
            def run(self, ctx):
                while True:
                    ctx.collect(1)

            def cancel(self):
                pass

        env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
        env.from_collection([1]).union(env.add_source(Endless())).print()
        assert self._mode(env) == "STREAMING"

    def test_batch_with_an_unbounded_source_is_refused(self):
        from weir.datastream import RuntimeExecutionMode
        from weir.datastream.functions import SourceFunction

        class Endless(SourceFunction):
            def run(self, ctx):
                ctx.collect(1)

            def cancel(self):
                pass

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        env.add_source(Endless(), "endless").print()
        with pytest.raises(ValueError, match="unbounded source"):
            build(env)


class TestSettingsAsPyFlinkReportsThem:
    """Defaults and round trips as PyFlink 2.3 reports them for a local environment."""

    def test_execution_config_shares_the_environments_parallelism(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        config = env.get_config()
        assert config.get_parallelism() == env.get_parallelism()
        assert config.get_max_parallelism() == -1
        config.set_parallelism(3)
        assert env.get_parallelism() == 3
        env.set_parallelism(5)
        assert config.get_parallelism() == 5
        config.set_max_parallelism(64)
        assert env.get_max_parallelism() == 64

    def test_execution_config_defaults_and_snapshot_compression(self, executor):
        env = StreamExecutionEnvironment.get_execution_environment()
        config = env.get_config()
        assert config.is_closure_cleaner_enabled()
        assert config.get_latency_tracking_interval() == 0
        assert config.get_task_cancellation_interval() == 30_000
        assert config.get_task_cancellation_timeout() == 180_000
        assert not config.has_generic_types_disabled()
        assert config.has_auto_generated_uids_enabled()
        assert not config.is_use_snapshot_compression()
        config.set_use_snapshot_compression(True)
        assert config.is_use_snapshot_compression()
        env.from_collection([1]).print()
        env.execute()
        graph = executor.job_graphs[0]
        assert graph.config["execution.checkpointing.snapshot-compression"] == "true"

    def test_checkpointing_queries_on_the_environment(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        assert env.get_checkpointing_consistency_mode() == CheckpointingMode.AT_LEAST_ONCE
        assert not env.is_unaligned_checkpoints_enabled()
        assert not env.is_force_unaligned_checkpoints()
        env.enable_checkpointing(1000)
        assert env.get_checkpointing_consistency_mode() == CheckpointingMode.EXACTLY_ONCE
        env.get_checkpoint_config().enable_unaligned_checkpoints()
        assert env.is_unaligned_checkpoints_enabled()

    def test_savepoint_directory_changelog_and_local_parallelism(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        assert env.get_default_savepoint_directory() is None
        env.set_default_savepoint_directory("file:///tmp/savepoints")
        assert env.get_default_savepoint_directory() == "file:/tmp/savepoints"
        assert env.is_changelog_state_backend_enabled() is None
        env.enable_changelog_state_backend(True)
        assert env.is_changelog_state_backend_enabled() is True
        assert env.is_chaining_of_operators_with_different_max_parallelism_enabled()
        default = StreamExecutionEnvironment.get_default_local_parallelism()
        try:
            StreamExecutionEnvironment.set_default_local_parallelism(7)
            assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == 7
        finally:
            StreamExecutionEnvironment.set_default_local_parallelism(default)
        env.from_collection([1]).print()
        env.close()
        with pytest.raises(JobGraphError, match="No operators"):
            env.execute()


class TestDependencies:
    def test_recorded_under_pyflinks_keys(self, tmp_path):
        env = StreamExecutionEnvironment.get_execution_environment()
        first, second = tmp_path / "a.py", tmp_path / "b.py"
        env.add_python_file(str(first))
        env.add_python_file(str(second))
        env.add_jars("file:///x.jar", "file:///y.jar")
        env.add_jars("file:///z.jar")
        env.set_python_executable("python3")
        env.set_python_requirements("req.txt", "cache")
        env.add_python_archive("venv.zip", "venv")
        config = env._configuration
        assert config.get_string("python.files", "") == f"{second},{first}"
        assert config.get_string("pipeline.jars", "") == "file:///x.jar;file:///y.jar;file:///z.jar"
        assert config.get_string("python.requirements", "") == "req.txt#cache"
        assert config.get_string("python.archives", "") == "venv.zip#venv"
        with pytest.raises(NotImplementedError, match="InputFormat"):
            env.create_input(object())
