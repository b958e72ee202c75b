"""Rows a map returns positionally under ROW_NAMED are read by name after key_by and rebalance."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
rt = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()])
rows = env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: Row("b", x), output_type=rt)
rows.key_by(lambda r: r[0]).map(
    lambda r: "keyed %s" % r.as_dict(), output_type=Types.STRING()
).print()
rows.rebalance().map(lambda r: "rebalanced %s" % r.as_dict(), output_type=Types.STRING()).print()
env.execute()
