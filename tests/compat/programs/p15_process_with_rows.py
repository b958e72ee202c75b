from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class RunningAverage(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.DOUBLE()))
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0.0) + value[1]
        count = (self.count.value() or 0) + 1
        self.total.update(total)
        self.count.update(count)
        yield Row(key=ctx.get_current_key(), avg=total / count, n=count)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
readings = [("s1", 20.0), ("s2", 18.5), ("s1", 22.0), ("s1", 21.0), ("s2", 19.5), ("s3", 30.25)]
(
    env.from_collection(readings, type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]))
    .key_by(lambda r: r[0])
    .process(
        RunningAverage(),
        output_type=Types.ROW_NAMED(
            ["key", "avg", "n"], [Types.STRING(), Types.DOUBLE(), Types.INT()]
        ),
    )
    .print()
)
env.execute("running average")
