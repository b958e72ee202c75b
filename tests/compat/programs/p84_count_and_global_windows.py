"""Count windows, tumbling and sliding, and global windows with count and purging triggers:
which elements each firing sees, per key."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import CountTrigger, GlobalWindows, PurgingTrigger


class Show(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        yield "%s %s %s" % (self.label, key, [e[1] for e in elements])


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", i) for i in range(1, 8)] + [("b", i) for i in range(10, 14)]
keyed = env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT()])).key_by(
    lambda x: x[0], key_type=Types.STRING()
)
keyed.count_window(3).process(Show("tumbling"), Types.STRING()).print()
keyed.count_window(3, 2).process(Show("sliding"), Types.STRING()).print()
keyed.window(GlobalWindows.create()).trigger(CountTrigger.of(2)).process(
    Show("global count"), Types.STRING()
).print()
keyed.window(GlobalWindows.create()).trigger(PurgingTrigger.of(CountTrigger.of(2))).process(
    Show("global purging"), Types.STRING()
).print()
keyed.count_window(2).reduce(lambda a, b: (a[0], a[1] + b[1])).print("reduce")
env.execute("count and global windows")
