"""Which outputs round their FLOAT values: those PyFlink serialises, and not a plain
function's input that PyFlink fuses with the only consumer of the function before it."""

from __future__ import annotations

import cloudpickle

from weir.common import Types
from weir.datastream import OutputTag, StreamExecutionEnvironment
from weir.datastream.functions import ProcessFunction


def float_outputs(env):
    """Operator name -> its payload's float_output, for the operators that have one."""
    graph = env._job_graph(clear=False).job_graph
    found = {}
    for vertex in graph.vertices:
        for op in vertex.operators:
            payload = cloudpickle.loads(op.payload)
            if "float_output" in payload:
                found[op.name] = payload["float_output"]
            if "float_side_outputs" in payload:
                found[op.name + " side"] = payload["float_side_outputs"]
    return found


def new_env():
    return StreamExecutionEnvironment.get_execution_environment().set_parallelism(1)


def test_a_source_rounds_its_output():
    env = new_env()
    env.from_collection([1.23], type_info=Types.FLOAT()).name("src").map(str).print()
    assert float_outputs(env) == {"Source: src": ("float",)}


def test_a_function_fused_with_its_only_consumer_does_not_round():
    env = new_env()
    source = env.from_collection([1.0], type_info=Types.DOUBLE())
    source.map(lambda x: x / 3, Types.FLOAT()).name("third").map(str).print()
    assert float_outputs(env) == {}


def test_a_function_with_two_consumers_rounds():
    env = new_env()
    third = env.from_collection([1.0], type_info=Types.DOUBLE()).map(lambda x: x, Types.FLOAT())
    third.name("third").map(str).print()
    third.print()
    assert float_outputs(env) == {"third": ("float",)}


def test_across_a_network_edge_or_into_an_unchained_function_it_rounds():
    env = new_env()
    source = env.from_collection([1.0], type_info=Types.DOUBLE())
    source.map(lambda x: x, Types.FLOAT()).name("a").rebalance().map(str).print()
    source.map(lambda x: x, Types.FLOAT()).name("b").map(str).disable_chaining().print()
    source.map(lambda x: x, Types.FLOAT()).name("c").key_by(lambda x: 1).map(str).print()
    assert float_outputs(env) == {"a": ("float",), "b": ("float",), "c": ("float",)}


def test_a_side_output_rounds_by_its_tag_type():
    env = new_env()
    tag = OutputTag("floats", Types.FLOAT())

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            yield tag, value

    main = env.from_collection([1.0], type_info=Types.DOUBLE()).process(Split(), Types.DOUBLE())
    main.name("split").get_side_output(tag).map(str).print()
    outputs = float_outputs(env)
    assert list(outputs) == ["split side"]
    assert list(outputs["split side"].values()) == [("float",)]
