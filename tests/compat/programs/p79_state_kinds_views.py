"""Every kind of keyed state read through its views: ValueState, ListState (add, add_all,
update, get), MapState (put_all, get, contains, keys, values, items, remove, is_empty),
ReducingState and AggregatingState, and clear() on each."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)


class Average(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


class AllStates(KeyedProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.last = ctx.get_state(ValueStateDescriptor("last", Types.INT()))
        self.history = ctx.get_list_state(ListStateDescriptor("history", Types.INT()))
        self.index = ctx.get_map_state(MapStateDescriptor("index", Types.INT(), Types.STRING()))
        self.total = ctx.get_reducing_state(
            ReducingStateDescriptor("total", lambda a, b: a + b, Types.INT())
        )
        self.mean = ctx.get_aggregating_state(
            AggregatingStateDescriptor("mean", Average(), Types.TUPLE([Types.INT(), Types.INT()]))
        )

    def process_element(self, value, ctx):
        n = value[1]
        previous = self.last.value()
        self.last.update(n)
        self.history.add(n)
        if n % 2 == 0:
            self.history.add_all([n, n])
        self.index.put_all({n: "v%d" % n, -n: "neg"}.items())
        self.total.add(n)
        self.mean.add(n)
        yield "%s previous=%s history=%s index=%s total=%s mean=%s" % (
            value[0],
            previous,
            list(self.history.get()),
            sorted(self.index.items()),
            self.total.get(),
            self.mean.get(),
        )
        yield "%s get=%s contains=%s keys=%s values=%s empty=%s" % (
            value[0],
            self.index.get(n),
            self.index.contains(-n),
            sorted(self.index.keys()),
            sorted(self.index.values()),
            self.index.is_empty(),
        )
        if n >= 4:
            self.index.remove(-n)
            self.history.update([n * 10])
            yield "%s after remove=%s history=%s" % (
                value[0],
                sorted(self.index.items()),
                list(self.history.get()),
            )
        if n >= 5:
            for state in (self.last, self.history, self.index, self.total, self.mean):
                state.clear()
            yield "%s cleared last=%s history=%s empty=%s total=%s mean=%s" % (
                value[0],
                self.last.value(),
                list(self.history.get()),
                self.index.is_empty(),
                self.total.get(),
                self.mean.get(),
            )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection(
    [("a", 1), ("b", 2), ("a", 4), ("b", 3), ("a", 5), ("a", 6)],
    type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
).key_by(lambda x: x[0], key_type=Types.STRING()).process(
    AllStates(), output_type=Types.STRING()
).print()
env.execute("state kinds")
