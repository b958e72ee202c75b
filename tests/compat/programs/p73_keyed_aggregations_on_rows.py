"""KeyedStream aggregations on Rows by field name and by index: sum, min, max, min_by, max_by;
a min keeps the other fields of the first record, a min_by takes the whole record."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

row = Types.ROW_NAMED(["k", "v", "w"], [Types.STRING(), Types.INT(), Types.DOUBLE()])
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 3, 1.5), ("a", 1, 9.0), ("b", 7, 2.0), ("a", 2, 0.5), ("b", 8, 4.5)]
keyed = env.from_collection(data, type_info=row).key_by(lambda r: r.k)
keyed.sum("v").print("sum v")
keyed.sum("w").print("sum w")
keyed.min("v").print("min v")
keyed.max("w").print("max w")
keyed.min_by("v").print("min_by v")
keyed.max_by("w").print("max_by w")
keyed.sum(1).print("sum 1")
keyed.min_by(2).print("min_by 2")
env.execute("aggregations on rows")
