"""The task names PyFlink gives user functions: sources and sinks prefixed Source: and Sink:,
chained operators joined with ->, and get_task_name_with_subtasks() ending in the attempt."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext


class Describe(MapFunction):
    def __init__(self, tag):
        self.tag = tag

    def open(self, runtime_context: RuntimeContext):
        self.info = "%s | %s | %s | %d/%d attempt %d" % (
            self.tag,
            runtime_context.get_task_name(),
            runtime_context.get_task_name_with_subtasks(),
            runtime_context.get_index_of_this_subtask(),
            runtime_context.get_number_of_parallel_subtasks(),
            runtime_context.get_attempt_number(),
        )

    def map(self, value):
        return self.info


class DescribeKeyed(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.info = "keyed | %s | %s" % (
            runtime_context.get_task_name(),
            runtime_context.get_task_name_with_subtasks(),
        )

    def process_element(self, value, ctx):
        yield "%s | key %s" % (self.info, ctx.get_current_key())


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
numbers = env.from_source(
    NumberSequenceSource(1, 4), WatermarkStrategy.no_watermarks(), "numbers"
).name("renamed numbers")
described = numbers.map(Describe("chained"), output_type=Types.STRING())
alone = (
    env.from_collection(["a", "b"], type_info=Types.STRING())
    .map(Describe("after a collection"), output_type=Types.STRING())
    .name("describe")
    .map(lambda s: s, output_type=Types.STRING())
    .disable_chaining()
    .name("unchained")
)
keyed = (
    env.from_collection([1, 2, 3, 4], type_info=Types.INT())
    .key_by(lambda x: x % 2, key_type=Types.INT())
    .process(DescribeKeyed(), output_type=Types.STRING())
    .name("per key")
)
described.union(alone, keyed).print().name("all of it")
env.execute("task names")
