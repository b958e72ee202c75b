"""What a Nexmark bid costs on the wire: bytes per record, and records per second through
one serialize and one deserialize, for the encodings a buffer may have: marshal of a
list of tuples (declared basic types), pickle (undeclared), and Arrow IPC of a
ColumnBatch (columns from a batch function or a columnar source). One 32 KiB segment's
worth of bids per buffer, as the RecordWriter cuts them.

    .venv/bin/python benchmarks/columnar_wire.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import bid_columns, bids

from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.job_graph import SerializerKind
from weir.core.serializers import (
    deserialize_records,
    serialize_batch,
    serialize_columnar,
)

SEGMENT = 32 * 1024
SPEC = ColumnSpec(("f0", "f1", "f2", "f3"), None, ("int64",) * 4)


def measure(encode, decode, records: int, rounds: int) -> tuple[float, float]:
    """(bytes per record, records/s through encode + decode), median of rounds."""
    size = len(encode())
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        repeats = 0
        while time.perf_counter() - start < 0.5:
            decode(encode())
            repeats += 1
        rates.append(repeats * records / (time.perf_counter() - start))
    return size / records, statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    # Records per buffer as the writer sizes them: a segment's worth of marshalled bids.
    probe = bids(0, 1024)
    per_record = len(serialize_batch(probe, SerializerKind.MARSHAL)) / len(probe)
    n = int(SEGMENT // per_record)
    records = bids(0, n)
    columns = ColumnBatch(bid_columns(0, n), SPEC)
    stamps = list(range(n))
    rows = [
        (
            "marshal (records)",
            lambda: serialize_batch(records, SerializerKind.MARSHAL),
            deserialize_records,
        ),
        (
            "pickle (records)",
            lambda: serialize_batch(records, SerializerKind.PICKLE),
            deserialize_records,
        ),
        ("arrow (columns)", lambda: serialize_columnar(columns), deserialize_records),
        (
            "arrow (columns, timestamps)",
            lambda: serialize_columnar(columns, stamps),
            deserialize_records,
        ),
    ]
    print(f"{n} bids per buffer (a 32 KiB segment of marshalled bids)")
    for name, encode, decode in rows:
        size, rate = measure(encode, decode, n, args.rounds)
        print(f"{name:28s} {size:6.1f} bytes/record  {rate:>13,.0f} records/s encode+decode")


if __name__ == "__main__":
    main()
