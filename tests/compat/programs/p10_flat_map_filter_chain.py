from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import FilterFunction, FlatMapFunction, MapFunction


class Words(FlatMapFunction):
    def flat_map(self, value):
        for w in value.split(","):
            if w:
                yield w.strip()


class LongWords(FilterFunction):
    def filter(self, value):
        return len(value) > 3


class Upper(MapFunction):
    def map(self, value):
        return value.upper()


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
src = env.from_collection(["alpha, be, gamma", "delta,,epsilon", "pi"], type_info=Types.STRING())
src.flat_map(Words(), output_type=Types.STRING()).filter(LongWords()).map(
    Upper(), output_type=Types.STRING()
).print()
src.map(lambda s: len(s), output_type=Types.INT()).filter(lambda n: n > 2).print("len")
env.execute()
