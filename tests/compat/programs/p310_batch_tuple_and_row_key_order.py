"""In BATCH execution mode keys of a declared TUPLE or ROW type come to a keyed operator in
PyFlink's order, that of their serialized bytes (the Tuple serializer's fields one after
another; the Row serializer's kind and null mask first), not of their pickled bytes. A
counter of the function instance shows the order; the state of a key is its own."""

from pyflink.common import Row, Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Trace(KeyedProcessFunction):
    def __init__(self, label):
        self.label = label

    def open(self, runtime_context: RuntimeContext):
        self.n = 0
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        self.n += 1
        total = (self.total.value() or 0) + value[2]
        self.total.update(total)
        yield "%s #%d key=%r total=%d" % (self.label, self.n, ctx.get_current_key(), total)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
records = env.from_collection(
    [
        ("b", 1, 5),
        ("a", 2, 3),
        ("a", -1, 9),
        ("é", 0, 1),
        ("aa", 0, 4),
        ("b", 1, 2),
        ("", 7, 8),
        ("a", 2, 6),
        ("B", 300, 7),
        ("zz", -300, 1),
    ],
    type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()]),
)
records.key_by(lambda v: (v[0], v[1]), key_type=Types.TUPLE([Types.STRING(), Types.INT()])).process(
    Trace("tuple"), output_type=Types.STRING()
).print()
records.key_by(
    lambda v: (v[1], v[0]), key_type=Types.TUPLE([Types.LONG(), Types.STRING()])
).process(Trace("tuple-long-first"), output_type=Types.STRING()).print()
records.key_by(
    lambda v: Row(v[0], v[1] if v[1] > 0 else None),
    key_type=Types.ROW([Types.STRING(), Types.INT()]),
).process(Trace("row"), output_type=Types.STRING()).print()
records.key_by(
    lambda v: Row(v[1] % 2 == 0, (v[0], float(v[1]))),
    key_type=Types.ROW([Types.BOOLEAN(), Types.TUPLE([Types.STRING(), Types.DOUBLE()])]),
).process(Trace("nested"), output_type=Types.STRING()).print()
env.execute("batch tuple and row key order")
