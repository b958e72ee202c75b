"""print() of every kind of declared type: numbers of each width, booleans, strings, chars,
decimals, dates, times, timestamps, lists, maps, and Rows and tuples nesting them. (Arrays
are left out: PyFlink prints them as Java array objects, [I@4b978105.)"""

import datetime
from decimal import Decimal

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)


def show(label, values, type_info):
    env.from_collection(values, type_info=type_info).print(label)


show("byte", [1, -3], Types.BYTE())
show("short", [300, -2], Types.SHORT())
show("int", [7, -8], Types.INT())
show("long", [2**40, -1], Types.LONG())
show("float", [1.5, 0.1, 3.0, 1e10, 1e-5], Types.FLOAT())
show("double", [1.5, 0.1, 3.0, 1e10, 1e-5, 12345678.9], Types.DOUBLE())
show("boolean", [True, False], Types.BOOLEAN())
show("string", ["x", ""], Types.STRING())
show("big int", [10**20], Types.BIG_INT())
show("big dec", [Decimal("1.50"), Decimal("-0.001")], Types.BIG_DEC())
show("date", [datetime.date(2024, 2, 29)], Types.SQL_DATE())
show("time", [datetime.time(12, 30, 5), datetime.time(1, 2, 3, 250000)], Types.SQL_TIME())
show("timestamp", [datetime.datetime(2024, 2, 29, 12, 30, 5, 120000)], Types.SQL_TIMESTAMP())
show("map", [{"a": 1}], Types.MAP(Types.STRING(), Types.INT()))
show(
    "row",
    [Row(1, "a", 2.5, True)],
    Types.ROW([Types.INT(), Types.STRING(), Types.DOUBLE(), Types.BOOLEAN()]),
)
show(
    "tuple",
    [(1, "a", 2.5, True, None)],
    Types.TUPLE([Types.INT(), Types.STRING(), Types.DOUBLE(), Types.BOOLEAN(), Types.STRING()]),
)
show(
    "tuple of row",
    [(1, Row("x", 2, 0.5, None))],
    Types.TUPLE(
        [Types.INT(), Types.ROW([Types.STRING(), Types.INT(), Types.DOUBLE(), Types.STRING()])]
    ),
)
# Lists come from a map declared to emit them (a collection of lists does not convert).
numbers = env.from_collection([3], type_info=Types.INT())
numbers.map(lambda n: list(range(n)), output_type=Types.LIST(Types.INT())).print("list")
numbers.map(lambda n: ["a"] * n, output_type=Types.LIST(Types.STRING())).print("list of strings")
numbers.map(
    lambda n: ("k", [1.5] * n),
    output_type=Types.TUPLE([Types.STRING(), Types.LIST(Types.DOUBLE())]),
).print("tuple of list")
env.execute("types")
