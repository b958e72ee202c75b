"""An int under a DOUBLE type prints as a double."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([3], type_info=Types.INT()).map(
    lambda x: x * 2, output_type=Types.DOUBLE()
).print()
env.from_collection([(1, 2)], type_info=Types.TUPLE([Types.INT(), Types.INT()])).map(
    lambda t: (t[0], t[1]), output_type=Types.TUPLE([Types.INT(), Types.DOUBLE()])
).print()
env.execute()
