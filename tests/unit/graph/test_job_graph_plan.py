"""The JobGraph's plan as ``weir info`` prints it: Flink's JsonPlanGenerator shape."""

from __future__ import annotations

import json

from weir.datastream import CoMapFunction, StreamExecutionEnvironment
from weir.graph import job_graph_plan_json


class Both(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return value


def test_job_graph_plan_has_flinks_shape():
    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(2)
    left = env.from_collection([1, 2]).key_by(lambda x: x)
    right = env.from_collection([3]).rebalance().map(lambda x: x).name("m")
    left.connect(right).map(Both()).name("co").print()
    graph = env._job_graph("plan", clear=False).job_graph

    plan = json.loads(job_graph_plan_json(graph))

    assert (plan["jid"], plan["name"]) == (graph.job_id, "plan")
    nodes = {n["contents"]: n for n in plan["nodes"]}
    assert [n["id"] for n in plan["nodes"]] == list(range(1, len(graph.vertices) + 1))
    assert {n["pact"] for n in plan["nodes"] if "predecessors" not in n} == {"Data Source"}
    co = next(n for n in plan["nodes"] if n["type"] == "co_map")
    assert co["pact"] == "Data Sink"  # the print sink is chained to it
    assert [(p["ship_strategy"], p["side"]) for p in co["predecessors"]] == [
        ("HASH", "first"),
        ("FORWARD", "second"),
    ]
    assert nodes["m"]["predecessors"][0]["ship_strategy"] == "REBALANCE"
    m = next(v for v in graph.vertices if v.name == "m")
    assert nodes["m"]["max_parallelism"] == m.max_parallelism
    assert [op["name"] for op in co["operators"]] == ["co", "Sink: Print to Std. Out"]
