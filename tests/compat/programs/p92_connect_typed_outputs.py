"""connect() of two typed streams through CoMapFunction and CoFlatMapFunction, keyed and not,
printed with each output type."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import CoFlatMapFunction, CoMapFunction


class Both(CoMapFunction):
    def map1(self, value):
        return ("left", value)

    def map2(self, value):
        return ("right", len(value))


class Split(CoFlatMapFunction):
    def flat_map1(self, value):
        for i in range(value):
            yield i

    def flat_map2(self, value):
        yield from (ord(c) for c in value)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
numbers = env.from_collection([1, 2, 3], type_info=Types.INT())
words = env.from_collection(["ab", "c"], type_info=Types.STRING())
numbers.connect(words).map(Both(), output_type=Types.TUPLE([Types.STRING(), Types.INT()])).print(
    "map"
)
numbers.connect(words).flat_map(Split(), output_type=Types.LONG()).print("flat_map")
numbers.connect(words).map(Both()).print("untyped")
numbers.key_by(lambda x: x % 2).connect(words.key_by(lambda w: len(w) % 2)).map(
    Both(), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
).print("keyed")
env.execute("connect typed outputs")
