"""Keys of a declared TUPLE or ROW type are placed on subtasks as PyFlink places them: by
the hashCode of the Flink Tuple or Row its coder makes of the key (nested ones too), not by
the key's pickled bytes. At parallelism 2 a keyed count prints each key with the prefix of
the subtask that owns it; the count lives in keyed state."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Count(KeyedProcessFunction):
    def __init__(self, label):
        self.label = label

    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield "%s %r #%d" % (self.label, ctx.get_current_key(), n)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
words = ["a", "b", "c", "d", "e", "f"]
pairs = env.from_collection(
    [(w, n) for w in words for n in (1, 6)] + [("f", 6), ("a", 1)],
    type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
)
pairs.key_by(lambda v: (v[0], v[1]), key_type=Types.TUPLE([Types.STRING(), Types.INT()])).process(
    Count("tuple"), output_type=Types.STRING()
).print()
pairs.key_by(
    lambda v: (v[0], v[1] * 1000000007), key_type=Types.TUPLE([Types.STRING(), Types.LONG()])
).process(Count("tuple-long"), output_type=Types.STRING()).print()
pairs.key_by(lambda v: Row(v[0], v[1]), key_type=Types.ROW([Types.STRING(), Types.INT()])).process(
    Count("row"), output_type=Types.STRING()
).print()
pairs.key_by(
    lambda v: Row(name=v[0], pair=(v[0], float(v[1]))),
    key_type=Types.ROW_NAMED(
        ["name", "pair"], [Types.STRING(), Types.TUPLE([Types.STRING(), Types.DOUBLE()])]
    ),
).process(Count("nested"), output_type=Types.STRING()).print()
pairs.key_by(
    lambda v: ((v[0], v[1] % 2 == 0), v[1]),
    key_type=Types.TUPLE([Types.TUPLE([Types.STRING(), Types.BOOLEAN()]), Types.SHORT()]),
).process(Count("tuple-in-tuple"), output_type=Types.STRING()).print()
env.execute("tuple and row keys")
