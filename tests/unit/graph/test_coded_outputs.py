"""Which outputs are coded with their declared type: those PyFlink serialises, and not a
record on its way to a Python function PyFlink fuses with the function that made it."""

from __future__ import annotations

import cloudpickle

from weir.common import Configuration, Duration, Row, Types, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.datastream import OutputTag, StreamExecutionEnvironment
from weir.datastream.functions import ProcessFunction

ROW_A = Types.ROW_NAMED(["a"], [Types.INT()])


def coded(env):
    """Operator name -> which of its outputs are coded: "main", "main after routing",
    "main, lenient" (a source) or "side <tag>"."""
    graph = env._job_graph(clear=False).job_graph
    found = {}
    for vertex in graph.vertices:
        for op in vertex.operators:
            payload = cloudpickle.loads(op.payload)
            outputs = []
            coder = payload.get("output_coder")
            if coder is not None:
                outputs.append(
                    "main after routing"
                    if payload.get("output_coded_after_routing")
                    else "main"
                    if coder.strict
                    else "main, lenient"
                )
            outputs += [f"side {tag}" for tag in payload.get("side_output_coders", {})]
            if outputs:
                found[op.name] = outputs
    return found


def new_env(config=None):
    env = StreamExecutionEnvironment.get_execution_environment(config)
    return env.set_parallelism(1)


def rows(env):
    return env.from_collection([1.5], type_info=Types.FLOAT()).name("src")


def test_a_source_codes_its_output_leniently():
    env = new_env()
    rows(env).map(str).print()
    assert coded(env) == {"Source: src": ["main, lenient"]}


def test_a_source_whose_type_reshapes_nothing_is_not_coded():
    # A source's records are Java objects in PyFlink, nothing checks them: only a type
    # that renames, reorders or rounds a value that fits it costs a source anything.
    for type_info in (
        Types.INT(),
        Types.TUPLE([Types.LONG(), Types.STRING()]),
        Types.LIST(Types.DOUBLE()),
    ):
        env = new_env()
        env.from_collection([], type_info=type_info).name("src").map(str).print()
        assert coded(env) == {}, type_info
    for type_info in (
        Types.FLOAT(),
        Types.TUPLE([Types.LONG(), Types.FLOAT()]),
        Types.MAP(Types.STRING(), Types.INT()),
        Types.LIST(Types.ROW([Types.INT()])),
    ):
        env = new_env()
        env.from_collection([], type_info=type_info).name("src").map(str).print()
        assert coded(env) == {"Source: src": ["main, lenient"]}, type_info


def test_a_function_fused_with_its_only_consumer_is_not_coded():
    env = new_env()
    made = rows(env).map(lambda x: Row(x), ROW_A).name("row")
    made.map(lambda r: r.a).name("read").filter(lambda v: True).map(str).print()
    assert coded(env) == {"Source: src": ["main, lenient"]}


def test_a_function_with_two_consumers_or_a_side_output_is_coded():
    env = new_env()
    made = rows(env).map(lambda x: Row(x), ROW_A).name("row")
    made.map(str).print()
    made.print()
    tag = OutputTag("late", Types.LONG())

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            yield tag, value
            yield Row(value)

    split = rows(env).process(Split(), ROW_A).name("split")
    split.get_side_output(tag).print()
    split.map(str).print()
    found = coded(env)
    assert found["row"] == ["main"]
    assert found["split"] == ["main", "side late"]


def test_across_a_shuffle_into_an_unchained_function_or_another_group_it_is_coded():
    env = new_env()
    source = rows(env)
    source.map(lambda x: x, Types.LONG()).name("a").rebalance().map(str).print()
    source.map(lambda x: x, Types.LONG()).name("b").map(str).disable_chaining().print()
    source.map(lambda x: x, Types.LONG()).name("c").map(str).set_parallelism(2).print()
    source.map(lambda x: x, Types.LONG()).name("d").slot_sharing_group("g").map(str).print()
    source.map(lambda x: x, Types.LONG()).name("e").set_max_parallelism(8).map(str).print()
    found = coded(env)
    for name in "abcde":
        assert found[name] == ["main"], name


def test_key_by_codes_after_taking_the_key_from_the_record_as_made():
    env = new_env()
    source = rows(env)
    source.map(lambda x: Row(x), ROW_A).name("keyed").key_by(lambda r: r.a).map(str).print()
    source.map(lambda x: Row(x), ROW_A).name("partitioned").partition_custom(
        lambda k, n: 0, lambda r: r.a
    ).map(str).print()
    # key_by's function takes the environment's parallelism: not fused with this one
    source.map(lambda x: Row(x), ROW_A).name("wide").set_parallelism(2).key_by(lambda r: r.a).map(
        str
    ).print()
    found = coded(env)
    assert found["keyed"] == ["main after routing"]
    assert found["partitioned"] == ["main after routing"]
    assert found["wide"] == ["main"]


def test_print_is_fused_for_a_row_type_and_java_for_the_others():
    env = new_env()
    source = rows(env)
    source.map(lambda x: Row(x), ROW_A).name("row").print()
    source.map(lambda x: x, Types.LONG()).name("long").print()
    source.map(lambda x: (x, x), Types.TUPLE([Types.INT(), Types.INT()])).name("pair").print()
    found = coded(env)
    assert "row" not in found
    assert found["long"] == ["main"]
    assert found["pair"] == ["main"]


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return 0


def test_a_timestamp_assigner_reads_the_record_as_made_and_its_output_is_coded():
    env = new_env()
    source = rows(env)
    with_assigner = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp())
    source.map(lambda x: Row(x), ROW_A).name("stamped").assign_timestamps_and_watermarks(
        with_assigner
    ).name("assigner").map(str).print()
    source.map(lambda x: Row(x), ROW_A).name("unstamped").assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    ).name("java").map(str).print()
    found = coded(env)
    assert "stamped" not in found
    assert found["assigner"] == ["main"]
    assert found["unstamped"] == ["main"]
    assert "java" not in found


def test_without_python_chaining_every_output_is_coded():
    config = Configuration()
    config.set_string("python.operator-chaining.enabled", "false")
    env = new_env(config)
    rows(env).map(lambda x: Row(x), ROW_A).name("row").map(lambda r: r.a).print()
    assert coded(env)["row"] == ["main"]
