"""Where PyFlink serialises a record with its declared type, its coder writes the value as
that type: a value it cannot write fails the job (a str for a LONG, a list for a TUPLE, an
int out of an INT's range, a tuple for a ROW, a None field of a TUPLE), one it can convert is
converted (a float or a bool for an INT, an int for a DOUBLE or a BOOLEAN), and a TUPLE's
fields beyond the type's are dropped. A None STRING record passes. print() of a Row stream
fails on a record that is no Row."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

S = Types.STRING()
INT = Types.INT()
PAIR = Types.TUPLE([INT, INT])
AB = Types.ROW_NAMED(["a", "b"], [INT, INT])


def new_env():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


def made(env, output, output_type):
    return env.from_collection([1], type_info=INT).map(lambda _: output, output_type)


def read(name, stream):
    # across a rebalance: the next function reads what the coder made of the value
    stream.rebalance().map(lambda v: "%s: %r" % (name, v), S).print()


# What the coders convert, all in one job.
env = new_env()
read("int from a float", made(env, 1.7, INT))
read("int from a bool", made(env, True, INT))
read("double from an int", made(env, 3, Types.DOUBLE()))
read("float from an int", made(env, 3, Types.FLOAT()))
read("boolean from an int", made(env, 2, Types.BOOLEAN()))
read("string from None", made(env, None, S))
read("tuple of three for two fields", made(env, (1, 2, 3), PAIR))
made(env, (4, 5, 6), PAIR).print()
read("row named otherwise", made(env, Row(b=2, a=1), AB))
read("object array with a None element", made(env, [1, None], Types.OBJECT_ARRAY(INT)))
env.execute("converted")


# What they refuse, a job each.
def attempt(name, output, output_type, printed=False):
    env = new_env()
    stream = made(env, output, output_type)
    try:
        if printed:
            stream.print()
        else:
            read(name, stream)
        env.execute(name)
        print(name, "finished")
    except Exception:
        print(name, "failed")


attempt("long from a str", "abc", Types.LONG())
attempt("long from a str, printed", "abc", Types.LONG(), printed=True)
attempt("int beyond its range", 2**40, INT)
attempt("tuple from a list", [1, 2], PAIR)
attempt("tuple with a None field", (1, None), PAIR)
attempt("row from a tuple", (1, 2), AB)
attempt("row without a field of the type", Row(a=1, c=2), AB)
attempt("list with a None element", [1, None], Types.LIST(INT))
attempt("row printed from a tuple", (1, 2), AB, printed=True)
