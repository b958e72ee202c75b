"""Reference counts of the files in a job's ``shared/`` (Flink's SharedStateRegistry).

Incremental checkpoints refer to SST files that earlier checkpoints uploaded. A file
is kept while a retained checkpoint refers to it: each completed checkpoint registers
the files it refers to, a subsumed one unregisters them, and a file whose count drops
to zero is deleted. Files of a checkpoint restored from outside the job (``weir run
-s``) are pinned: this job never deletes them.

No I/O and no lock of its own: the CheckpointCoordinator calls it under its lock and
deletes what ``unregister`` returns after releasing it. Registering a checkpoint twice
is a no-op, so the counts can be rebuilt from the retained checkpoints' metadata after
a failover without counting one twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


class SharedStateRegistry:
    def __init__(self) -> None:
        self._by_checkpoint: dict[int, frozenset[str]] = {}
        self._counts: Counter[str] = Counter()
        self._pinned: set[str] = set()

    def register(self, checkpoint_id: int, paths: Iterable[str]) -> None:
        """Checkpoint ``checkpoint_id`` completed (or was found retained) and refers to
        ``paths``."""
        if checkpoint_id in self._by_checkpoint:
            return
        files = frozenset(paths)
        self._by_checkpoint[checkpoint_id] = files
        self._counts.update(files)

    def pin(self, paths: Iterable[str]) -> None:
        """Never report ``paths`` as unreferenced (files of a restored external
        checkpoint or savepoint)."""
        self._pinned.update(paths)

    def unregister(self, checkpoint_id: int) -> list[str]:
        """Checkpoint ``checkpoint_id`` was subsumed: the files no retained checkpoint
        refers to any more, to delete."""
        files = self._by_checkpoint.pop(checkpoint_id, frozenset())
        gone = []
        for path in files:
            self._counts[path] -= 1
            if self._counts[path] <= 0:
                del self._counts[path]
                if path not in self._pinned:
                    gone.append(path)
        return sorted(gone)

    def unreferenced(self, paths: Iterable[str]) -> list[str]:
        """Of ``paths`` (uploaded for a checkpoint that was aborted), those no registered
        checkpoint refers to: safe to delete."""
        return sorted({p for p in paths if self._counts[p] <= 0 and p not in self._pinned})

    def is_registered(self, checkpoint_id: int) -> bool:
        return checkpoint_id in self._by_checkpoint

    def reference_count(self, path: str) -> int:
        return self._counts[path]
