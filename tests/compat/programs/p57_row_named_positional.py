"""A positional Row under Types.ROW_NAMED gets the field names, from from_collection and from a map."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
rt = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()])
env.from_collection([Row("a", 1)], type_info=rt).map(
    lambda r: "%s %s" % (r.k, r.as_dict()), output_type=Types.STRING()
).print()
env.execute()
