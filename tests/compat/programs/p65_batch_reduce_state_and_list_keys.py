"""A keyed reduce in BATCH execution mode: each key's final value only, the reduce function's
own state is its key's, list keys work, and min_by/max_by/sum chain as in PyFlink. (At
parallelism 1: in BATCH mode PyFlink sizes operators left at the default parallelism by
their data.)"""

from pyflink.common import Row, Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeySelector, ReduceFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Second(KeySelector):
    def get_key(self, value):
        return value[1]


class Concat(ReduceFunction):
    def open(self, runtime_context: RuntimeContext):
        self.merges = runtime_context.get_state(ValueStateDescriptor("merges", Types.INT()))

    def reduce(self, a, b):
        merges = (self.merges.value() or 0) + 1
        self.merges.update(merges)
        return Row(a[0] + b[0], a[1], merges)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
rows = env.from_collection(
    [("a", 0), ("c", 1), ("d", 1), ("b", 0), ("e", 1)],
    type_info=Types.ROW([Types.STRING(), Types.INT()]),
)
rows.key_by(Second(), key_type=Types.INT()).reduce(Concat()).map(
    lambda r: "%s %s merges=%s" % (r[0], r[1], r[2]), output_type=Types.STRING()
).print("concat")

named = env.from_collection(
    [(1, "9", 0), (1, "5", 1), (1, "6", 2), (5, "5", 0), (5, "3", 1)],
    type_info=Types.ROW_NAMED(["v1", "v2", "v3"], [Types.INT(), Types.STRING(), Types.INT()]),
)


def as_pairs(values):
    for v in values:
        yield int(v), 1


(
    named.key_by(lambda x: x[0])
    .min_by("v2")
    .map(
        lambda x: (x[0], x[1], x[2]),
        output_type=Types.TUPLE([Types.INT(), Types.STRING(), Types.INT()]),
    )
    .key_by(lambda x: x[2])
    .max(0)
    .flat_map(as_pairs, output_type=Types.TUPLE([Types.INT(), Types.INT()]))
    .key_by(lambda x: [1])
    .min_by()
    .print("list key")
)
named.key_by(lambda x: [x[0] % 2]).sum("v3").print("sum")
env.execute("batch reduce")
