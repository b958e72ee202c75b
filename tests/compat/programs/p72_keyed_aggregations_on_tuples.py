"""KeyedStream.sum, min, max, min_by and max_by on tuples by field index, on plain numbers, and
chained, as PyFlink emits them: one running result per record."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

triple = Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()])
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 3, 10), ("b", 5, 1), ("a", 1, 7), ("a", 4, 2), ("b", 5, 9), ("b", 2, 3)]
ds = env.from_collection(data, type_info=triple)
keyed = ds.key_by(lambda t: t[0])
keyed.sum(1).print("sum 1")
keyed.sum(2).print("sum 2")
keyed.min(1).print("min 1")
keyed.max(2).print("max 2")
keyed.min_by(1).print("min_by 1")
keyed.max_by(1).print("max_by 1")
keyed.min_by(2).print("min_by 2")
numbers = env.from_collection([5, 3, 8, 1, 9, 2], type_info=Types.INT())
by_parity = numbers.key_by(lambda x: x % 2)
by_parity.sum().print("sum of numbers")
by_parity.max().print("max of numbers")
by_parity.min_by().print("min_by of numbers")
env.execute("aggregations on tuples")
