from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, Partitioner, RuntimeContext


class ByParity(Partitioner):
    def partition(self, key, num_partitions):
        return key % num_partitions


class Where(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return "%d@%d" % (value, self.index)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
ds = env.from_collection(list(range(9)), type_info=Types.INT())
ds.partition_custom(ByParity(), lambda x: x).map(Where(), output_type=Types.STRING()).print(
    "custom"
)
ds.broadcast().map(Where(), output_type=Types.STRING()).print("broadcast")
ds.map(lambda x: x * 2, output_type=Types.INT()).set_parallelism(1).print("single").set_parallelism(
    1
)
env.execute("partitioning")
