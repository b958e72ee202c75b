"""Source readers that keep splits: what it costs.

- reading: a NumberSequenceSource reader's numbers per second, polled in batches of
  ``--batch`` (the task's hot path for that source; a split list adds one deque look-up
  per batch);
- checkpointing: a bounded FileSource reader holding ``--files`` splits, the time of
  ``snapshot_splits`` plus pickling the list (the synchronous part on the task thread);
- rescaling: a new subtask's restore when ``--old`` subtasks' split lists (``--files``
  splits in all) are restored at ``--new``: unpickling every old list, taking its
  round-robin share and handing it to a fresh reader (``SourceOperator.open``'s work;
  each new subtask does it once, in parallel on a cluster).

Times are process CPU time, medians of ``--repeat`` runs.

    python benchmarks/source_splits.py [--numbers N] [--batch N] [--files N]
                                       [--old P] [--new P] [--repeat N]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import tempfile
import time
from pathlib import Path

from weir.core.source import assign_splits, create_reader
from weir.datastream.connectors.file_system import FileSource, StreamFormat
from weir.datastream.connectors.number_seq import NumberSequenceSource


class _Context:
    def __init__(self, index: int, parallelism: int) -> None:
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism


def _median_cpu_s(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return statistics.median(times)


def reading(numbers: int, batch: int, repeat: int) -> float:
    source = NumberSequenceSource(1, numbers)

    def run() -> None:
        reader = source.create_reader(_Context(0, 1))
        while reader.poll_batch(batch) is not None:
            pass

    return numbers / _median_cpu_s(run, repeat)


def _file_source(directory: Path, files: int) -> FileSource:
    for i in range(files):
        (directory / f"{i}.txt").write_text("x\n")
    return FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(directory)
    ).build()


def checkpointing(source: FileSource, repeat: int) -> float:
    reader = source.create_reader(_Context(0, 1))
    reader.snapshot_splits(0)  # lists the files once, as the first poll would

    def run() -> None:
        pickle.dumps(reader.snapshot_splits(1), 5)

    return _median_cpu_s(run, repeat)


def rescaling(source: FileSource, old: int, new: int, repeat: int) -> float:
    blobs = [
        pickle.dumps(source.create_reader(_Context(i, old)).snapshot_splits(1), 5)
        for i in range(old)
    ]

    def run() -> None:
        lists = [pickle.loads(blob) for blob in blobs]
        splits = assign_splits(lists, new - 1, new)
        create_reader(source, _Context(new - 1, new), restored_splits=splits)

    return _median_cpu_s(run, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--numbers", type=int, default=20_000_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--old", type=int, default=4)
    parser.add_argument("--new", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    rate = reading(args.numbers, args.batch, args.repeat)
    print(f"NumberSequenceSource reader: {rate / 1e6:.1f} M numbers/s (batches of {args.batch})")
    with tempfile.TemporaryDirectory() as directory:
        source = _file_source(Path(directory), args.files)
        snapshot_s = checkpointing(source, args.repeat)
        print(f"FileSource snapshot of {args.files} splits: {snapshot_s * 1000:.2f} ms CPU")
        restore_s = rescaling(source, args.old, args.new, args.repeat)
        print(
            f"restore of one new subtask, {args.files} splits from {args.old} subtasks at "
            f"{args.new}: {restore_s * 1000:.2f} ms CPU"
        )


if __name__ == "__main__":
    main()
