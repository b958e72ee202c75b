"""FLOAT fields print as Java floats, SQL_TIMESTAMP as java.sql.Timestamp."""

import datetime

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1 / 3, 16777217.0, 3.14159], type_info=Types.FLOAT()).print("float")
env.from_collection([1 / 3], type_info=Types.DOUBLE()).map(
    lambda x: x, output_type=Types.FLOAT()
).print("float_map")
env.from_collection(
    [datetime.datetime(2024, 2, 29, 13, 5, 7, 123000), datetime.datetime(2024, 2, 29, 13, 5, 7)],
    type_info=Types.SQL_TIMESTAMP(),
).print("ts")
env.execute()
