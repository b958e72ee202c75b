"""Rows, named and positional, through map, flat_map, filter, process, key_by, reduce, union
and connect: what each operator prints when its output is declared a Row type and when not."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import CoMapFunction, ProcessFunction

named = Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.INT()])
positional = Types.ROW([Types.STRING(), Types.INT()])


class Describe(ProcessFunction):
    def process_element(self, value, ctx):
        yield Row(name=value.name.upper(), n=value.n * 10)


class Both(CoMapFunction):
    def map1(self, value):
        return "left %s %s" % (value, value.as_dict() if hasattr(value, "as_dict") else "")

    def map2(self, value):
        return "right %s" % (value,)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
rows = env.from_collection([("a", 1), ("b", 2), ("a", 3)], type_info=named)
rows.print("source")
rows.map(lambda r: Row(r.name, r.n + 1), output_type=positional).print("map positional")
rows.map(lambda r: Row(name=r.name, n=r.n + 1), output_type=named).print("map named")
rows.map(lambda r: Row(r.name, r.n)).print("map untyped")
rows.flat_map(lambda r: [r, r], output_type=named).print("flat_map")
rows.filter(lambda r: r.n > 1).print("filter")
rows.process(Describe(), output_type=named).print("process")
rows.key_by(lambda r: r.name).reduce(lambda a, b: Row(name=a.name, n=a.n + b.n)).print("reduce")
rows.key_by(lambda r: r.name).map(
    lambda r: (r[0], r[1]), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
).print("keyed map")
other = env.from_collection([("z", 9)], type_info=named)
rows.union(other).map(lambda r: "%s=%d" % (r["name"], r["n"]), Types.STRING()).print("union")
rows.connect(other).map(Both(), output_type=Types.STRING()).print("connect")
env.execute("rows")
