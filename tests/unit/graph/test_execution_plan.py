"""The execution plan as PyFlink prints it: the operators it adds, fused Python operators,
its node order and its JSON layout."""

from __future__ import annotations

import json

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment


def env(parallelism: int = 2) -> StreamExecutionEnvironment:
    e = StreamExecutionEnvironment.get_execution_environment()
    e.set_parallelism(parallelism)
    return e


def nodes(e: StreamExecutionEnvironment) -> list[tuple[str, int, list[tuple[int, str]]]]:
    """(type, parallelism, [(index of predecessor, ship strategy)]) per node, in order."""
    plan = json.loads(e.get_execution_plan())["nodes"]
    index = {n["id"]: i for i, n in enumerate(plan)}
    return [
        (
            n["type"],
            n["parallelism"],
            [(index[p["id"]], p["ship_strategy"]) for p in n.get("predecessors", [])],
        )
        for n in plan
    ]


class TestExecutionPlan:
    def test_consecutive_python_operators_are_fused(self):
        e = env()
        e.from_collection([1], type_info=Types.INT()).map(lambda x: x, Types.INT()).filter(
            lambda x: x
        ).print()
        assert nodes(e) == [
            ("Source: Collection Source", 1, []),
            ("Map, Filter", 2, [(0, "REBALANCE")]),
            ("Sink: Print to Std. Out", 2, [(1, "FORWARD")]),
        ]

    def test_key_by_adds_a_map_at_the_upstream_parallelism(self):
        e = env()
        e.from_collection([1], type_info=Types.INT()).key_by(lambda x: x).reduce(
            lambda a, b: a
        ).print()
        assert nodes(e) == [
            ("Source: Collection Source", 1, []),
            ("_stream_key_by_map_operator", 1, [(0, "FORWARD")]),
            ("Reduce", 2, [(1, "HASH")]),
            ("Sink: Print to Std. Out", 2, [(2, "FORWARD")]),
        ]

    def test_print_maps_untyped_records_to_strings_first(self):
        e = env(1)
        e.from_collection([1], type_info=Types.INT()).map(lambda x: x).print()
        assert [n[0] for n in nodes(e)] == [
            "Source: Collection Source",
            "Map, Map",
            "Sink: Print to Std. Out",
        ]

    def test_chaining_hints_stop_fusion_but_the_environment_switch_does_not(self):
        e = env(1)
        e.disable_operator_chaining()
        ds = e.from_collection([1], type_info=Types.INT())
        ds.map(lambda x: x, Types.INT()).map(lambda x: x, Types.INT()).start_new_chain().map(
            lambda x: x, Types.INT()
        ).print()
        assert [n[0] for n in nodes(e)] == [
            "Source: Collection Source",
            "Map",
            "Map, Map",
            "Sink: Print to Std. Out",
        ]

    def test_fused_nodes_follow_the_others_and_sinks_come_last(self):
        e = env()
        ds = e.from_collection([1], type_info=Types.INT())
        ds.map(lambda x: x, Types.INT()).map(lambda x: x, Types.INT()).print()
        ds.map(lambda x: x, Types.INT()).set_parallelism(1).print()
        assert [n[0] for n in nodes(e)] == [
            "Source: Collection Source",
            "Map",
            "Map, Map",
            "Sink: Print to Std. Out",
            "Sink: Print to Std. Out",
        ]

    def test_laid_out_as_jackson_does(self):
        e = env(1)
        e.from_collection([1], type_info=Types.INT()).print()
        assert e.get_execution_plan() == (
            "{\n"
            '  "nodes" : [ {\n'
            '    "id" : 1,\n'
            '    "type" : "Source: Collection Source",\n'
            '    "pact" : "Data Source",\n'
            '    "contents" : "Source: Collection Source",\n'
            '    "parallelism" : 1\n'
            "  }, {\n"
            '    "id" : 2,\n'
            '    "type" : "Sink: Print to Std. Out",\n'
            '    "pact" : "Data Sink",\n'
            '    "contents" : "Sink: Print to Std. Out",\n'
            '    "parallelism" : 1,\n'
            '    "predecessors" : [ {\n'
            '      "id" : 1,\n'
            '      "ship_strategy" : "FORWARD",\n'
            '      "side" : "second"\n'
            "    } ]\n"
            "  } ]\n"
            "}"
        )

    def test_a_sink_fed_by_a_union_of_keyed_streams_gets_both_values_operators(self):
        e = env()
        one = e.from_collection([1]).key_by(lambda x: x)
        two = e.from_collection([2]).key_by(lambda x: x)
        one.union(two).add_sink(lambda value: None)
        plan = nodes(e)
        values = [i for i, n in enumerate(plan) if n[0].startswith("_keyed_stream_values_operator")]
        assert len(values) == 2
        sink = plan[-1]
        assert sink[0] == "Sink: Unnamed"
        assert sorted(i for i, _ in sink[2]) == values

    def test_project_is_a_java_operator_and_not_fused(self):
        e = env(1)
        t = Types.TUPLE([Types.INT(), Types.INT()])
        e.from_collection([(1, 2)], type_info=t).project(1).map(lambda x: x).print()
        assert [n[0] for n in nodes(e)][1:3] == ["Projection", "Map, Map"]
