from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import CoFlatMapFunction, CoMapFunction


class Tag(CoMapFunction):
    def map1(self, value):
        return "left-%s" % value

    def map2(self, value):
        return "right-%s" % value


class Split(CoFlatMapFunction):
    def flat_map1(self, value):
        for ch in value:
            yield ch

    def flat_map2(self, value):
        yield str(value * 2)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
a = env.from_collection([1, 2, 3], type_info=Types.INT())
b = env.from_collection([10, 20], type_info=Types.INT())
c = env.from_collection(["xy", "z"], type_info=Types.STRING())
a.union(b).map(lambda x: x + 1, output_type=Types.INT()).print("union")
a.connect(b).map(Tag(), output_type=Types.STRING()).print("comap")
c.connect(a).flat_map(Split(), output_type=Types.STRING()).print("coflat")
env.execute("union and connect")
