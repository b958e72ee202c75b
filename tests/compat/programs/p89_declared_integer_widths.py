"""Integers wider than their declared Java type, in a collection: PyFlink converts each to
the declared width (Java's narrowing, which wraps around), at the source only."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([40000, -40000, 32767], type_info=Types.SHORT()).print("short")
env.from_collection([200, -129, 127], type_info=Types.BYTE()).print("byte")
env.from_collection([3000000000, 9147483648, -2147483649], type_info=Types.INT()).print("int")
env.from_collection(
    [(70000, 300, 5000000000), (1, 2, 3)],
    type_info=Types.TUPLE([Types.SHORT(), Types.BYTE(), Types.INT()]),
).print("tuple")
env.from_collection(
    [Row(40000, "x"), (65536, "y")],
    type_info=Types.ROW_NAMED(["n", "s"], [Types.SHORT(), Types.STRING()]),
).map(lambda r: (r.n, r.s, type(r.n).__name__)).print("row")
env.from_collection([{"a": 3000000000}], type_info=Types.MAP(Types.STRING(), Types.INT())).print(
    "map"
)
env.execute("declared integer widths")
