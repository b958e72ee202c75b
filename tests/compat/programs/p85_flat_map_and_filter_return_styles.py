"""What flat_map and filter accept as results: generators, lists, tuples, None, empty
iterables, strings, and filter results that are not booleans (truthiness decides)."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import FilterFunction, FlatMapFunction


class Words(FlatMapFunction):
    def flat_map(self, value):
        for word in value.split():
            yield word, len(word)


class Truthy(FilterFunction):
    def filter(self, value):
        return value[1] - 2 if isinstance(value[1], int) else value[1]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
lines = env.from_collection(["to be", "", "or not"], type_info=Types.STRING())
lines.flat_map(Words(), output_type=Types.TUPLE([Types.STRING(), Types.INT()])).print("gen")
lines.flat_map(lambda s: s.split()).print("list")
lines.flat_map(lambda s: tuple(s.upper())).print("chars")
lines.flat_map(lambda s: s).print("string")
lines.flat_map(lambda s: []).print("empty")
values = env.from_collection([("a", 1), ("b", 2), ("c", 3), ("d", ""), ("e", "x"), ("f", None)])
values.filter(Truthy()).print("truthy")
values.filter(lambda v: v).print("all")
env.execute("return styles")
