"""Rows print with each field's str(), as PyFlink turns them into text before printing."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
ti = Types.ROW([Types.DOUBLE(), Types.BOOLEAN(), Types.STRING(), Types.INT()])
ds = env.from_collection([Row(1e20, True, None, 7)], type_info=ti)
ds.print("direct")
ds.map(lambda r: str([type(f).__name__ for f in r]), output_type=Types.STRING()).print("types")
ds.map(lambda r: r, output_type=ti).print("after_map")
env.execute()
