"""Strings and unicode through print() and execute_and_collect(), declared as STRING and
untyped, and bytes collected back. (Printing untyped bytes fails in PyFlink 2.3.)"""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
texts = ["plain", "ünïcødé", "tab\there", "emoji 🎉", ""]
env.from_collection(texts, type_info=Types.STRING()).print("string")
env.from_collection(texts).print("untyped")
blobs = [b"bytes", bytearray(b"array"), b"\x00\xff"]
env.from_collection(texts, type_info=Types.STRING()).map(
    lambda s: len(s), output_type=Types.INT()
).print("length")
env.execute("strings")
print(list(env.from_collection(blobs).execute_and_collect()))
print(list(env.from_collection(texts, type_info=Types.STRING()).execute_and_collect()))
