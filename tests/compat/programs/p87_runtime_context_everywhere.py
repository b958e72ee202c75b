"""The RuntimeContext in every kind of function: index, parallelism, max parallelism, attempt,
task name and job parameters, as open() sees them in a map, a filter, a keyed process function,
a co-map and a process window function; a source feeding two chained operators names its
task "Source -> (A, B)"."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    CoMapFunction,
    FilterFunction,
    KeyedProcessFunction,
    MapFunction,
    ProcessWindowFunction,
    RuntimeContext,
)


def describe(label, ctx: RuntimeContext):
    return "%s %s %d/%d max=%d attempt=%d param=%s default=%s" % (
        label,
        ctx.get_task_name(),
        ctx.get_index_of_this_subtask(),
        ctx.get_number_of_parallel_subtasks(),
        ctx.get_max_number_of_parallel_subtasks(),
        ctx.get_attempt_number(),
        ctx.get_job_parameter("region", "?"),
        ctx.get_job_parameter("missing", "fallback"),
    )


class M(MapFunction):
    def open(self, ctx):
        self.info = describe("map", ctx)

    def map(self, value):
        return self.info


class F(FilterFunction):
    def open(self, ctx):
        print(describe("filter", ctx))

    def filter(self, value):
        return True


class K(KeyedProcessFunction):
    def open(self, ctx):
        self.info = describe("keyed", ctx)

    def process_element(self, value, ctx):
        yield self.info


class C(CoMapFunction):
    def open(self, ctx):
        self.info = describe("co", ctx)

    def map1(self, value):
        return self.info

    def map2(self, value):
        return self.info


class W(ProcessWindowFunction):
    def open(self, ctx):
        self.info = describe("window", ctx)

    def process(self, key, context, elements):
        yield self.info


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.set_max_parallelism(16)
env.get_config().set_global_job_parameters({"region": "eu"})
ds = env.from_collection([1, 2], type_info=Types.INT())
ds.map(M(), Types.STRING()).name("describe").print()
ds.filter(F()).print("kept")


def numbers():
    return env.from_collection([1, 2], type_info=Types.INT())


numbers().key_by(lambda x: x % 2).process(K(), Types.STRING()).print()
numbers().connect(numbers()).map(C(), Types.STRING()).print()
numbers().key_by(lambda x: 0).count_window(2).process(W(), Types.STRING()).print()
env.execute("contexts")
