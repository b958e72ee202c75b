"""In BATCH mode, operators that set no parallelism run at the parallelism Flink's adaptive
batch scheduler decides from the volume of data they consume: a small job's keyed
operators run at 1 (print() without subtask prefixes) though env.set_parallelism(2) was
called; a parallel source runs at the job's parallelism, a FileSource at one subtask per
file up to it. The execution.batch.adaptive.auto-parallelism.* keys turn it off, raise the
lower bound, shrink the volume per subtask, and bound the parallelism; an operator's own
set_parallelism is kept. Where a keyed operator's parallelism is decided and it sets no max
parallelism, its key groups are the upper bound, which places keys otherwise."""

import os
import tempfile

from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.datastream import MapFunction, RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource, StreamFormat
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

AUTO = "execution.batch.adaptive.auto-parallelism."
WORDS = ["apple", "bear", "cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay"]


class Parallelism(MapFunction):
    """Tags a record with the number of subtasks of the operator it passes."""

    def __init__(self, label):
        self.label = label

    def open(self, runtime_context):
        self.parallelism = runtime_context.get_number_of_parallel_subtasks()

    def map(self, value):
        return ("%s at %d" % (self.label, self.parallelism), 1)


def environment(settings, max_parallelism=None):
    config = Configuration()
    for key, value in settings.items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    if max_parallelism is not None:
        env.set_max_parallelism(max_parallelism)
    return env


def keyed_counts(env, label):
    pairs = Types.TUPLE([Types.STRING(), Types.INT()])
    words = env.from_collection([(w, n) for n, w in enumerate(WORDS)], type_info=pairs)
    (
        words.key_by(lambda pair: pair[0])
        .sum(1)
        .map(lambda pair: "%s %s=%d" % (label, pair[0], pair[1]), Types.STRING())
        .print()
    )


def counted(stream, label, sink_parallelism=None):
    tagged = stream.map(Parallelism(label), Types.TUPLE([Types.STRING(), Types.INT()]))
    sink = (
        tagged.key_by(lambda pair: pair[0])
        .sum(1)
        .map(lambda pair: "%s: %d records" % pair, Types.STRING())
        .print()
    )
    if sink_parallelism is not None:
        sink.set_parallelism(sink_parallelism)


directory = tempfile.mkdtemp()
for name in ("one", "two", "three"):
    os.makedirs(os.path.join(directory, name))
    for part in range({"one": 1, "two": 2, "three": 3}[name]):
        with open(os.path.join(directory, name, "part-%d.txt" % part), "w") as handle:
            handle.write("x\ny\n")

# The job: key_by(...).sum(1).print() prints no prefix in a small BATCH job.
env = environment({})
keyed_counts(env, "small")
sequence = env.from_source(NumberSequenceSource(1, 20), WatermarkStrategy.no_watermarks(), "seq")
counted(sequence, "sequence source")
counted(sequence.rebalance().map(lambda n: n * 2, Types.LONG()), "map after rebalance")
for name in ("one", "three"):
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), os.path.join(directory, name)
    ).build()
    files = env.from_source(source, WatermarkStrategy.no_watermarks(), name)
    counted(files, "file source of %s file(s)" % name)
env.execute("decided")

# Turned off: the job's parallelism everywhere, 128 key groups.
env = environment({AUTO + "enabled": "false"})
keyed_counts(env, "off")
counted(env.from_source(NumberSequenceSource(1, 5), WatermarkStrategy.no_watermarks(), "s"), "off")
env.execute("off")

# A lower bound of 2: the keyed operator runs at 2 with 2 key groups (the upper bound).
env = environment({AUTO + "min-parallelism": "2"})
keyed_counts(env, "min2")
env.execute("min-parallelism")

# One byte a subtask: every decided operator runs at the upper bound, 3 here, under the max
# parallelism set (4); a source at the default source parallelism, a FileSource at one
# subtask per file; an operator's own parallelism is kept, and the operator after it, which
# declared the job's, is rebalanced and decided. (The sinks run at 1: with more subtasks than
# a result has key groups with data, Flink spreads the key groups by their bytes.)
env = environment(
    {
        AUTO + "avg-data-volume-per-task": "1b",
        AUTO + "max-parallelism": "3",
        AUTO + "default-source-parallelism": "3",
    },
    max_parallelism=4,
)
pairs = Types.TUPLE([Types.STRING(), Types.INT()])
words = env.from_collection([(w, n) for n, w in enumerate(WORDS)], type_info=pairs)
counted(words.key_by(lambda pair: pair[0]).sum(1), "tiny keyed sum", 1)
counted(words.map(lambda pair: pair, pairs), "tiny map after the collection", 1)
sequence = env.from_source(NumberSequenceSource(1, 12), WatermarkStrategy.no_watermarks(), "seq")
counted(sequence, "tiny sequence source", 1)
own = sequence.rebalance().map(lambda n: n, Types.LONG()).set_parallelism(1)
counted(own, "tiny after a map set to 1", 1)
for name in ("two", "three"):
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), os.path.join(directory, name)
    ).build()
    files = env.from_source(source, WatermarkStrategy.no_watermarks(), name)
    counted(files, "tiny file source of %s files" % name, 1)
env.execute("tiny volume")
