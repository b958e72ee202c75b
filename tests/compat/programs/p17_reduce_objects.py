from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ReduceFunction


class MergeLists(ReduceFunction):
    def reduce(self, a, b):
        return (a[0], a[1] + b[1], max(a[2], b[2]))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("x", [1], 0.5), ("y", [2], 1.5), ("x", [3], 2.5), ("x", [4], 0.25), ("y", [5], 9.0)]
(
    env.from_collection(data)
    .key_by(lambda t: t[0])
    .reduce(MergeLists())
    .map(lambda t: "%s %s %.2f" % t, output_type=Types.STRING())
    .print()
)
env.execute()
