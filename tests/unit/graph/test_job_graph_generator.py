from __future__ import annotations

import os

import pytest

from weir.core.errors import JobGraphError
from weir.core.job_graph import PartitionerKind
from weir.core.key_groups import default_max_parallelism
from weir.datastream import StreamExecutionEnvironment
from weir.graph import uid_to_operator_id


def new_env(parallelism=2):
    return StreamExecutionEnvironment.get_execution_environment().set_parallelism(parallelism)


def build(env):
    return env._job_graph(clear=False).job_graph


def chains(graph):
    return [[op.name for op in v.operators] for v in graph.vertices]


def pipeline(env, uid=None):
    src = env.from_collection([1, 2, 3]).map(lambda x: x).set_parallelism(2).name("a")
    b = src.map(lambda x: x + 1).name("b")
    if uid:
        b.uid(uid)
    b.key_by(lambda x: x % 2).reduce(lambda x, y: x + y).name("r").print()
    return env


class TestChaining:
    def test_forward_equal_parallelism_chains(self):
        env = new_env()
        env.from_collection([1]).rebalance().map(lambda x: x).name("m1").map(lambda x: x).name(
            "m2"
        ).print()
        assert chains(build(env))[1] == ["m1", "m2", "Sink: Print to Std. Out"]

    def test_unequal_parallelism_is_rebalance_and_does_not_chain(self):
        env = new_env()
        env.from_collection([1]).map(lambda x: x).name("m").print()
        graph = build(env)
        assert chains(graph) == [["Source: Collection Source"], ["m", "Sink: Print to Std. Out"]]
        assert graph.edges[0].partitioner is PartitionerKind.REBALANCE

    def test_explicit_forward_with_unequal_parallelism_fails(self):
        env = new_env()
        env.from_collection([1]).forward().map(lambda x: x).print()
        with pytest.raises(JobGraphError, match="Forward partitioning does not allow change"):
            build(env)

    def test_non_forward_edge_does_not_chain(self):
        env = new_env(1)
        env.from_collection([1]).shuffle().map(lambda x: x).name("m").print()
        assert chains(build(env)) == [
            ["Source: Collection Source"],
            ["m", "Sink: Print to Std. Out"],
        ]

    def test_env_disable_operator_chaining(self):
        env = new_env(1).disable_operator_chaining()
        env.from_collection([1]).map(lambda x: x).print()
        assert len(build(env).vertices) == 3

    def test_start_new_chain_breaks_before_only(self):
        env = new_env(1)
        env.from_collection([1]).map(lambda x: x).name("m1").map(lambda x: x).name(
            "m2"
        ).start_new_chain().map(lambda x: x).name("m3")
        assert chains(build(env)) == [["Source: Collection Source", "m1"], ["m2", "m3"]]

    def test_disable_chaining_breaks_both_sides(self):
        env = new_env(1)
        env.from_collection([1]).map(lambda x: x).name("m1").disable_chaining().map(
            lambda x: x
        ).name("m2")
        assert chains(build(env)) == [["Source: Collection Source"], ["m1"], ["m2"]]

    def test_slot_sharing_group_breaks_and_is_inherited(self):
        env = new_env(1)
        env.from_collection([1]).map(lambda x: x).name("m1").slot_sharing_group("g").map(
            lambda x: x
        ).name("m2")
        graph = build(env)
        assert chains(graph) == [["Source: Collection Source"], ["m1", "m2"]]
        assert graph.vertices[1].slot_sharing_group == "g"

    def test_union_input_does_not_chain(self):
        env = new_env(1)
        a = env.from_collection([1])
        a.union(env.from_collection([2])).map(lambda x: x).name("m")
        graph = build(env)
        assert ["m"] in chains(graph)

    def test_fan_out_lists_chained_outputs(self):
        env = new_env(1)
        m = env.from_collection([1]).map(lambda x: x).name("m")
        m.map(lambda x: x).name("x").print()
        m.map(lambda x: x).name("y").rebalance().print()
        graph = build(env)
        vertex = graph.vertices[0]
        ops = {op.name: op for op in vertex.operators}
        assert list(ops) == ["Source: Collection Source", "m", "x", "Sink: Print to Std. Out", "y"]
        assert ops["m"].chained_outputs == (ops["x"].operator_id, ops["y"].operator_id)
        (edge,) = graph.edges
        assert edge.source_operator == ops["y"].operator_id
        assert edge.source_vertex == vertex.vertex_id

    def test_vertex_name_groups_chained_outputs_as_flink(self):
        env = new_env(1)
        m = env.from_collection([1]).map(lambda x: x).name("m")
        m.map(lambda x: x).name("x").print()
        m.map(lambda x: x).name("y").rebalance().print()
        vertex = build(env).vertices[0]
        assert vertex.name == (
            "Source: Collection Source -> m -> (x -> Sink: Print to Std. Out, y)"
        )


class TestOperatorIds:
    def test_same_program_same_ids(self):
        first = build(pipeline(new_env()))
        second = build(pipeline(new_env()))
        ids = [[op.operator_id for op in v.operators] for v in first.vertices]
        assert ids == [[op.operator_id for op in v.operators] for v in second.vertices]
        assert first.job_id != second.job_id

    def test_uid_gives_the_same_id_wherever_the_operator_is(self):
        graph = build(pipeline(new_env(), uid="my-uid"))
        env = new_env()
        env.from_collection([1]).map(lambda x: x).map(lambda x: x).map(lambda x: x).uid(
            "my-uid"
        ).print()
        other = build(env)
        expected = uid_to_operator_id("my-uid")
        for g in (graph, other):
            assert any(
                op.operator_id == expected and op.uid == "my-uid"
                for v in g.vertices
                for op in v.operators
            )

    def test_duplicate_uid_is_named(self):
        env = new_env()
        env.from_collection([1]).map(lambda x: x).uid("dup").map(lambda x: x).uid("dup")
        with pytest.raises(JobGraphError, match="'dup'"):
            build(env)

    def test_set_uid_hash_is_used_and_validated(self):
        env = new_env()
        env.from_collection([1]).map(lambda x: x).set_uid_hash("AB" * 16)
        assert any(op.operator_id == "ab" * 16 for v in build(env).vertices for op in v.operators)
        env = new_env()
        env.from_collection([1]).map(lambda x: x).set_uid_hash("xyz")
        with pytest.raises(JobGraphError, match="32 hexadecimal"):
            build(env)

    def test_vertex_id_is_head_operator_id(self):
        graph = build(pipeline(new_env()))
        for vertex in graph.vertices:
            assert vertex.vertex_id == vertex.head.operator_id
            assert len(vertex.head.operator_id) == 32


class TestParallelism:
    def test_defaults(self):
        env = new_env(3)
        env.from_collection([1]).map(lambda x: x).set_parallelism(300).name("big").print()
        graph = build(env)
        source, big, sink = graph.vertices
        assert source.parallelism == 1
        assert source.max_parallelism == 1  # from_collection is forced non-parallel
        assert big.parallelism == 300 and big.max_parallelism == default_max_parallelism(300)
        assert sink.parallelism == 3

    def test_env_and_operator_max_parallelism(self):
        env = new_env(2).set_max_parallelism(16)
        env.from_collection([1]).map(lambda x: x).set_max_parallelism(8).name(
            "m"
        ).rebalance().print()
        graph = build(env)
        by_name = {v.head.name: v for v in graph.vertices}
        assert by_name["m"].max_parallelism == 8
        assert by_name["Sink: Print to Std. Out"].max_parallelism == 16

    def test_max_below_parallelism_fails(self):
        env = new_env(4)
        env.from_collection([1]).map(lambda x: x).set_max_parallelism(2).name("m").print()
        with pytest.raises(JobGraphError, match="'m'"):
            build(env)

    def test_vertices_are_topological(self):
        graph = build(pipeline(new_env()))
        position = {v.vertex_id: i for i, v in enumerate(graph.vertices)}
        assert all(position[e.source_vertex] < position[e.target_vertex] for e in graph.edges)


class TestLocalPaths:
    """Relative local paths mean the program's directory: the JobMaster and the tasks,
    each in a directory of its own, get them absolute."""

    def test_checkpoint_and_recovery_paths_become_absolute(self):
        from weir.common import Configuration

        conf = Configuration()
        conf.set_string("execution.checkpointing.dir", "chk")
        conf.set_string("execution.state-recovery.path", "s3://bucket/chk-3")
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.from_collection([1]).print()
        config = build(env).config
        assert config["execution.checkpointing.dir"] == os.path.join(os.getcwd(), "chk")
        assert config["execution.state-recovery.path"] == "s3://bucket/chk-3"

    def test_file_connector_paths_become_absolute(self):
        from weir.common.serialization import Encoder
        from weir.datastream.connectors.file_system import (
            FileSink,
            FileSource,
            StreamFormat,
        )

        sink = FileSink.for_row_format("out", Encoder.simple_string_encoder()).build()
        source = FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), "in", "file:///data"
        ).build()
        assert sink._base_path == os.path.join(os.getcwd(), "out")
        assert source._paths == (os.path.join(os.getcwd(), "in"), "file:///data")
