"""print() inside a user function shows on the client's stdout beside the print sink's lines."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def show(x):
    print("saw", x)
    return x


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1, 2], type_info=Types.INT()).map(show, output_type=Types.INT()).print()
env.execute("print in udf")
