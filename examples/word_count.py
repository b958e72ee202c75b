"""Word count with the DataStream API: the same program runs on PyFlink with its
imports changed from ``weir`` to ``pyflink``.

    python examples/word_count.py                 # embedded MiniCluster
    python examples/word_count.py --output FILE   # write the final counts to FILE
    weir run examples/word_count.py               # on a running cluster
"""

import argparse
import sys

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

TEXT = [
    "A weir is a barrier across the width of a river",
    "that alters the flow characteristics of water",
    "and usually results in a change in the height of the river level",
    "weirs are also used to control the flow of water for outlets of lakes",
    "ponds and reservoirs",
    "the water flows over the top of the weir",
    "and the flow rate can be measured from the height of the water",
]


def split(line):
    yield from line.lower().split()


def word_count(output_path=None):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)

    counts = (
        env.from_collection(TEXT, type_info=Types.STRING())
        .flat_map(split, output_type=Types.STRING())
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )

    if output_path is None:
        counts.print()
        env.execute("word_count")
        return

    final = {}
    with counts.execute_and_collect("word_count") as results:
        for word, count in results:
            final[word] = count  # running counts: the last one per word is the total
    with open(output_path, "w", encoding="utf-8") as out:
        for word in sorted(final):
            out.write(f"{word},{final[word]}\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", help="write the final counts as word,count lines")
    known, _ = parser.parse_known_args(sys.argv[1:])
    word_count(known.output)
