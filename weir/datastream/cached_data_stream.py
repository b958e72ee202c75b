"""``CachedDataStream``: a stream whose result the first job computing it keeps, for the
later jobs of its environment to read (``DataStream.cache()``, BATCH mode only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from weir.datastream.data_stream import DataStream
from weir.graph.transformations import CacheTransformation

if TYPE_CHECKING:
    from weir.datastream.stream_execution_environment import StreamExecutionEnvironment

__all__ = ["CachedDataStream"]


def _refuse(message: str) -> NoReturn:
    # PyFlink raises a plain Exception with these words.
    raise Exception(message)


class CachedDataStream(DataStream):
    """A DataStream whose intermediate result is kept the first time a job computes it, as
    PyFlink's; later jobs of the same environment that use it read what was kept instead of
    computing it again. What is kept is released by ``invalidate()`` and when the
    environment closes (``env.close()``, or the program's end); a job that finds it gone
    computes it again::

        cached = env.from_collection(data).map(expensive).cache()
        with cached.execute_and_collect() as results: ...   # computes and keeps it
        cached.map(more).print(); env.execute()            # reads what was kept
        cached.invalidate()                                 # released
    """

    _transformation: CacheTransformation

    def __init__(
        self, env: StreamExecutionEnvironment, transformation: CacheTransformation
    ) -> None:
        super().__init__(env, transformation)

    def invalidate(self) -> None:
        """Release the cached result; a later job that uses the stream computes it again."""
        self._transformation.cache.release()

    # The cache's operator settings are its input's, as in PyFlink.
    def set_parallelism(self, parallelism: int) -> Any:
        _refuse("Set parallelism for CachedDataStream is not supported.")

    def name(self, name: str) -> Any:
        _refuse("Set name for CachedDataStream is not supported.")

    def get_name(self) -> str:
        _refuse("Get name of CachedDataStream is not supported.")

    def uid(self, uid: str) -> Any:
        _refuse("Set uid for CachedDataStream is not supported.")

    def set_uid_hash(self, uid_hash: str) -> Any:
        _refuse("Set uid hash for CachedDataStream is not supported.")

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        _refuse("Set max parallelism for CachedDataStream is not supported.")

    def force_non_parallel(self) -> DataStream:
        _refuse("Set force non-parallel for CachedDataStream is not supported.")
