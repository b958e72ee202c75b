"""The broadcast API: broadcast() as partitioner or BroadcastStream, connect, process with
the right function for the (non-)keyed side, and the JobGraph it becomes."""

from __future__ import annotations

import pytest

from weir.common import Types
from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.datastream import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
    DataStream,
    StreamExecutionEnvironment,
)
from weir.datastream.functions import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from weir.datastream.state import MapStateDescriptor, ValueStateDescriptor

RULES = MapStateDescriptor("rules", Types.STRING(), Types.INT())
MORE = MapStateDescriptor("more", Types.INT(), Types.INT())


class Plain(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        return None

    def process_broadcast_element(self, value, ctx):
        return None


class Keyed(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        return None

    def process_broadcast_element(self, value, ctx):
        return None


@pytest.fixture
def env():
    return StreamExecutionEnvironment().set_parallelism(2)


def test_broadcast_without_descriptors_stays_the_broadcast_partitioner(env):
    ds = env.from_collection([1, 2]).broadcast()
    assert type(ds) is DataStream
    assert ds._transformation.partitioner is PartitionerKind.BROADCAST


def test_broadcast_with_descriptors_is_a_broadcast_stream(env):
    stream = env.from_collection([1]).broadcast(RULES, MORE)
    assert isinstance(stream, BroadcastStream)
    assert stream.broadcast_state_descriptors == [RULES, MORE]
    assert stream.input_stream._transformation.partitioner is PartitionerKind.BROADCAST
    connected = env.from_collection([2]).connect(stream)
    assert isinstance(connected, BroadcastConnectedStream)
    assert connected.broadcast_state_descriptors == [RULES, MORE]
    assert isinstance(env.from_collection([2]).connect(env.from_collection([3])), ConnectedStreams)


@pytest.mark.parametrize("bad", [ValueStateDescriptor("v", Types.INT()), "rules"])
def test_only_map_state_descriptors_declare_broadcast_state(env, bad):
    with pytest.raises(TypeError, match="broadcast_state_descriptor must be MapStateDescriptor"):
        env.from_collection([1]).broadcast(RULES, bad)


def test_a_keyed_stream_cannot_be_broadcast(env):
    keyed = env.from_collection([1]).key_by(lambda x: x)
    for args in ((), (RULES,)):
        with pytest.raises(Exception, match="Cannot override partitioning for KeyedStream"):
            keyed.broadcast(*args)


def test_each_side_needs_its_function(env):
    stream = env.from_collection([1]).broadcast(RULES)
    plain = env.from_collection([2]).connect(stream)
    keyed = env.from_collection([2]).key_by(lambda x: x).connect(stream)
    with pytest.raises(TypeError, match="BroadcastProcessFunction should be applied to non-keyed"):
        keyed.process(Plain())
    with pytest.raises(TypeError, match="KeyedBroadcastProcessFunction should be applied to keyed"):
        plain.process(Keyed())
    with pytest.raises(TypeError, match="takes a BroadcastProcessFunction"):
        plain.process(lambda x: x)
    with pytest.raises(TypeError, match="output_type must be None, list or TypeInformation"):
        plain.process(Plain(), output_type="STRING")


def test_the_job_graph_broadcasts_into_the_second_input(env):
    events = env.from_collection([("a", 1)]).key_by(lambda x: x[0], key_type=Types.STRING())
    rules = env.from_collection([("a", 2)]).broadcast(RULES)
    events.connect(rules).process(Keyed(), output_type=Types.STRING()).print()
    graph = env._job_graph(clear=False).job_graph

    (vertex,) = [v for v in graph.vertices if v.head.kind is OperatorKind.KEYED_BROADCAST_PROCESS]
    assert vertex.head.name == "Keyed-Co-Process-Broadcast" and vertex.head.input_count == 2
    edges = [e for e in graph.edges if e.target_vertex == vertex.vertex_id]
    into = {e.input_index: e.partitioner for e in edges}
    assert into == {0: PartitionerKind.KEY_GROUP, 1: PartitionerKind.BROADCAST}


def test_a_non_keyed_stream_gets_the_non_keyed_operator(env):
    stream = env.from_collection([1]).connect(env.from_collection([2]).broadcast(RULES))
    result = stream.process(Plain(), output_type=[Types.INT()])
    t = result._transformation
    assert (t.kind, t.name) == (OperatorKind.BROADCAST_PROCESS, "Co-Process-Broadcast")
    assert t.payload["broadcast_state_descriptors"] == [RULES]
    assert "key_selectors" not in t.payload
