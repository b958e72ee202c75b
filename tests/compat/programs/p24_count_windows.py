"""Count windows, which need no timestamps: count_window(n) (tumbling, purging), count_window(n,
slide) (sliding), GlobalWindows with CountTrigger (fires without purging, so contents keep
growing) and with PurgingTrigger.of(CountTrigger); incomplete windows are not fired at end of
input."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import CountTrigger, GlobalWindows, PurgingTrigger


class Contents(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        yield "%s key=%s window=%s values=%s" % (
            self.label,
            key,
            type(context.window()).__name__,
            [e[1] for e in elements],
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", 1),
    ("b", 2),
    ("a", 3),
    ("a", 4),
    ("b", 5),
    ("a", 6),
    ("b", 7),
    ("a", 8),
    ("b", 9),
    ("a", 10),
    ("a", 11),
]
keyed = env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT()])).key_by(
    lambda t: t[0], key_type=Types.STRING()
)

(
    keyed.count_window(3)
    .reduce(
        lambda a, b: (a[0], a[1] + b[1]), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    .print("tumbling")
)
keyed.count_window(3, 2).process(Contents("sliding"), output_type=Types.STRING()).print()
(
    keyed.window(GlobalWindows.create())
    .trigger(CountTrigger.of(2))
    .process(Contents("global"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(GlobalWindows.create())
    .trigger(PurgingTrigger.of(CountTrigger.of(2)))
    .process(Contents("purging"), output_type=Types.STRING())
    .print()
)
env.execute("count windows")
