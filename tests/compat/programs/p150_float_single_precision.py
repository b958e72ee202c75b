"""FLOAT values are 32 bits wide once serialised with their declared type: a function
reading a FLOAT from a source, across a rebalance or a key_by, or from a function whose
output has several consumers, sees it rounded to single precision, inside a Row, tuple,
list, array or map too; a plain function fused with the only consumer of the function that
made the value sees it as made; print() shows Java's text of the float, and
execute_and_collect() returns that text read as a Python float."""

from pyflink.common import Duration, Row, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import (
    BroadcastProcessFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from pyflink.datastream.state import MapStateDescriptor
from pyflink.datastream.window import TumblingEventTimeWindows

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)


def show(tag):
    return lambda value: f"{tag} {value!r}"


STRING = Types.STRING()
DOUBLE = Types.DOUBLE()
FLOAT = Types.FLOAT()

# from a source
env.from_collection([1.23, 4.56, -0.1], type_info=FLOAT).map(show("source"), STRING).print()
thirds = env.from_collection([1.23, 2.0], type_info=DOUBLE).map(lambda x: x / 3, FLOAT)
# chained to the function that made it: as made
thirds.map(show("chained"), STRING).print()
# across a network edge: rounded
thirds.rebalance().map(show("rebalanced"), STRING).print()
thirds.key_by(lambda x: 1).map(show("keyed"), STRING).print()
# printed as Java prints a float
thirds.print()
# composites
rows = env.from_collection(
    [Row("a", 1.23, 7), Row("b", 0.1, 8)],
    type_info=Types.ROW_NAMED(["name", "price", "n"], [STRING, FLOAT, Types.INT()]),
)
rows.map(lambda r: f"row {r.name} {r.price!r} {r.n!r}", STRING).print()
rows.print()
env.from_collection([("a", 1.23)], type_info=Types.TUPLE([STRING, FLOAT])).map(
    show("tuple"), STRING
).print()
ints = env.from_collection([1], type_info=Types.INT())
ints.map(lambda x: [1.23, 2.5], Types.LIST(FLOAT)).rebalance().map(show("list"), STRING).print()
ints.map(lambda x: [0.1, 0.7], Types.PRIMITIVE_ARRAY(FLOAT)).rebalance().map(
    show("array"), STRING
).print()
ints.map(lambda x: {"k": 1.23}, Types.MAP(STRING, FLOAT)).rebalance().map(
    show("map"), STRING
).print()
# a DOUBLE stays as it is
env.from_collection([1.23], type_info=DOUBLE).rebalance().map(show("double"), STRING).print()
# a side output is rounded by its tag's type
tag = OutputTag("floats", FLOAT)


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        yield tag, value / 7
        yield value


sides = env.from_collection([1.0], type_info=DOUBLE).process(Split(), DOUBLE)
sides.get_side_output(tag).map(show("side"), STRING).print()
sides.map(show("main"), STRING).print()
# the only consumer, a plain function after a Python function: fused, as made
doubles = env.from_collection([1.0, 2.0], type_info=DOUBLE)
doubles.map(lambda x: x / 3, FLOAT).map(show("fused"), STRING).print()
doubles.map(lambda x: x / 3, FLOAT).filter(lambda x: x > 0).map(show("fused twice"), STRING).print()
# ... unless it may not chain
doubles.map(lambda x: x / 3, FLOAT).map(show("unchained"), STRING).disable_chaining().print()
# a main output beside a side output: serialised
sides_tag = OutputTag("rest", DOUBLE)


class Thirds(ProcessFunction):
    def process_element(self, value, ctx):
        yield value / 3
        yield sides_tag, value


thirds_with_side = doubles.process(Thirds(), FLOAT)
thirds_with_side.map(show("beside a side output"), STRING).print()
thirds_with_side.get_side_output(sides_tag).map(show("the side output"), STRING).print()
# a keyed reduce, then a plain function
doubles.map(lambda x: ("k", x / 3), Types.TUPLE([STRING, FLOAT])).key_by(lambda t: t[0]).reduce(
    lambda a, b: (a[0], a[1] + b[1])
).map(show("after reduce"), STRING).print()


# a timestamp assigner between two functions
class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return 1000


doubles.map(lambda x: x / 3, FLOAT).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        Stamp()
    )
).map(show("after timestamps"), STRING).print()
# a window's result, then a plain function
doubles.map(lambda x: ("w", x / 3), Types.TUPLE([STRING, FLOAT])).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        Stamp()
    )
).key_by(lambda t: t[0]).window(TumblingEventTimeWindows.of(Time.seconds(10))).reduce(
    lambda a, b: (a[0], a[1] + b[1]), output_type=Types.TUPLE([STRING, FLOAT])
).map(show("after window"), STRING).print()
# a broadcast function's result, then a plain function
rules = MapStateDescriptor("rules", STRING, STRING)


class Scale(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value / 7

    def process_broadcast_element(self, value, ctx):
        pass


doubles.connect(env.from_collection(["r"], type_info=STRING).broadcast(rules)).process(
    Scale(), FLOAT
).map(show("after broadcast"), STRING).print()
env.execute("float single precision")

with thirds.execute_and_collect() as results:
    print("collected", sorted(repr(x) for x in results))
with rows.execute_and_collect() as results:
    print("collected rows", sorted(repr(r) for r in results))
