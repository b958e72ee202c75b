"""Tuples, declared and not, through map, flat_map, key_by and reduce, union and project: the
Java tuple printing of declared ones, Python's str of the rest."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

pair = Types.TUPLE([Types.STRING(), Types.INT()])
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
typed = env.from_collection([("a", 1), ("b", 2), ("a", 3)], type_info=pair)
untyped = env.from_collection([("a", 1), ("b", 2), ("a", 3)])
typed.print("typed")
untyped.print("untyped")
typed.map(
    lambda t: (t[0], t[1], t[1] * 1.5),
    output_type=Types.TUPLE([Types.STRING(), Types.INT(), Types.DOUBLE()]),
).print("triple")
typed.map(
    lambda t: (t[0], (t[1], [t[1]])),
    output_type=Types.TUPLE([Types.STRING(), Types.TUPLE([Types.INT(), Types.LIST(Types.INT())])]),
).print("nested")
untyped.map(lambda t: (t[0], (t[1], [t[1]]))).print("nested untyped")
typed.flat_map(lambda t: [t] * t[1], output_type=pair).print("flat_map")
typed.key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print("reduce typed")
untyped.key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print("reduce untyped")
typed.union(typed).project(1).print("project")
typed.map(lambda t: t[1] > 1, output_type=Types.BOOLEAN()).print("bools")
env.execute("tuples")
