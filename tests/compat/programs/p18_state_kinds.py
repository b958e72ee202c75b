from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
)


class Average(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


class AllKinds(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.history = runtime_context.get_list_state(ListStateDescriptor("history", Types.INT()))
        self.by_parity = runtime_context.get_map_state(
            MapStateDescriptor("by_parity", Types.STRING(), Types.INT())
        )
        self.maximum = runtime_context.get_reducing_state(
            ReducingStateDescriptor("max", lambda a, b: max(a, b), Types.INT())
        )
        self.average = runtime_context.get_aggregating_state(
            AggregatingStateDescriptor("avg", Average(), Types.TUPLE([Types.INT(), Types.INT()]))
        )

    def process_element(self, value, ctx):
        v = value[1]
        self.history.add(v)
        parity = "even" if v % 2 == 0 else "odd"
        self.by_parity.put(parity, (self.by_parity.get(parity) or 0) + 1)
        self.maximum.add(v)
        self.average.add(v)
        if len(list(self.history.get())) >= 3:
            self.history.update([v])
        yield "%s history=%s parity=%s contains_even=%s max=%s avg=%.3f empty=%s" % (
            ctx.get_current_key(),
            list(self.history.get()),
            sorted(self.by_parity.items()),
            self.by_parity.contains("even"),
            self.maximum.get(),
            self.average.get(),
            self.by_parity.is_empty(),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 1), ("b", 10), ("a", 4), ("a", 7), ("b", 3), ("a", 2), ("b", 8)]
(
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    .key_by(lambda t: t[0])
    .process(AllKinds(), output_type=Types.STRING())
    .print()
)
env.execute("state kinds")
