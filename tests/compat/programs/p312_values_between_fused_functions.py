"""A record goes through its declared type's coder only where PyFlink serialises it: between
Python functions PyFlink runs fused (a plain function that is the only consumer of the one
before it, key_by's and print()'s own functions, a timestamp assigner, an async function)
the next function reads the Python object the first one made. So a map in a Row keeps its
insertion order there, a positional Row has no field names, and a value of the wrong type
goes through; across a rebalance, or from a function with two consumers, the Row is named
and the map comes in Java HashMap order."""

import asyncio

from pyflink.common import Configuration, Row, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment
from pyflink.datastream.functions import AsyncFunction

S = Types.STRING()
EXTRAS = Types.ROW_NAMED(["extras"], [Types.MAP(S, Types.INT())])
ROW_A = Types.ROW_NAMED(["a"], [Types.INT()])


def new_env(parallelism=1, config=None):
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(parallelism)
    return env


def extras(env):
    return env.from_collection([1], type_info=Types.INT()).map(
        lambda _: Row(extras={"bags": 1, "lounge": 2}), output_type=EXTRAS
    )


def positional(env):
    return env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: Row(x), ROW_A)


env = new_env()
# fused with print()'s own function: as made
extras(env).print()
extras(env).map(lambda r: "fused %s" % list(r.extras), S).print()
extras(env).rebalance().map(lambda r: "rebalanced %s" % list(r.extras), S).print()
both = extras(env)
both.map(lambda r: "one of two %s" % list(r.extras), S).print()
both.map(lambda r: "two of two %s" % list(r.extras), S).print()
positional(env).print()
positional(env).rebalance().map(lambda r: "rebalanced a=%d" % r.a, S).print()
positional(env).key_by(lambda r: r[0]).map(lambda r: "keyed a=%d" % r.a, S).print()
env.from_collection([1], type_info=Types.INT()).map(lambda x: "abc", Types.LONG()).map(
    lambda v: "fused " + v + "!", S
).print()
env.execute("values between fused functions")


class ByName(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.a


class AsyncRepr(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(0)
        return [repr(value)]


def attempt(name, build, env):
    try:
        with build(env).execute_and_collect() as results:
            print(name, "finished", sorted(repr(r) for r in results))
    except Exception:
        print(name, "failed")


# A positional Row read by name in a function fused with the one that made it: no names.
attempt("map by name", lambda env: positional(env).map(lambda r: r.a * 10), new_env())
attempt("filter by name", lambda env: positional(env).filter(lambda r: r.a > 0), new_env())
attempt(
    "timestamps by name",
    lambda env: (
        positional(env)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByName())
        )
        .map(lambda r: r.a * 10)
    ),
    new_env(),
)
# (an async function reads the Row as made too: no names)
attempt(
    "async",
    lambda env: AsyncDataStream.unordered_wait(
        positional(env), AsyncRepr(), Time.seconds(10), 10, S
    ),
    new_env(),
)
# ... and where the Row crossed a shuffle, or PyFlink's Python chaining is off, it has them.
attempt(
    "map by name after rebalance",
    lambda env: positional(env).rebalance().map(lambda r: r.a * 10),
    new_env(),
)
no_python_chaining = Configuration()
no_python_chaining.set_string("python.operator-chaining.enabled", "false")
attempt(
    "map by name without python chaining",
    lambda env: positional(env).map(lambda r: r.a * 10),
    new_env(config=no_python_chaining),
)
