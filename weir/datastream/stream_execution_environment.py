"""``StreamExecutionEnvironment``: where a job's sources are declared and the job is run."""

from __future__ import annotations

import itertools
import os
import shlex
import sys
import tempfile
import uuid
from collections.abc import Iterable
from typing import Any

from weir.common.configuration import Configuration
from weir.common.execution_config import ExecutionConfig
from weir.common.job_client import JobClient
from weir.common.typeinfo import TypeInformation, Types
from weir.common.watermark_strategy import WatermarkStrategy
from weir.core import config as config_keys
from weir.core.executor import (
    CloseableIterator,
    JobExecutionResult,
    get_context_configuration,
    get_executor,
    is_executor_registered,
)
from weir.core.job_graph import OperatorKind
from weir.datastream._intermediate_cache import (
    IntermediateCache,
    cache_transformation,
    release_at_exit,
    resolve_caches,
)
from weir.datastream.cached_data_stream import CachedDataStream
from weir.datastream.checkpoint_config import CheckpointConfig, CheckpointingMode
from weir.datastream.connectors.collection import CollectionSource
from weir.datastream.connectors.text_file import TextFileSource
from weir.datastream.data_stream import DataStream
from weir.datastream.execution_mode import RuntimeExecutionMode
from weir.datastream.functions import SourceFunction
from weir.datastream.slot_sharing_group import SlotSharingGroup
from weir.datastream.state_backend import StateBackend
from weir.graph.adaptive_batch import AdaptiveBatchParallelism
from weir.graph.execution_plan import execution_plan_json
from weir.graph.job_graph_generator import JobGraphResult, create_job_graph
from weir.graph.stream_graph import StreamGraph, build_stream_graph
from weir.graph.transformations import (
    PhysicalTransformation,
    SideOutputTransformation,
    Transformation,
)

__all__ = ["StreamExecutionEnvironment"]

DEFAULT_JOB_NAME = "Flink Streaming Job"
_MAX_MAX_PARALLELISM = 1 << 15


class StreamExecutionEnvironment:
    """The context a streaming program runs in, as PyFlink's::

    >>> env = StreamExecutionEnvironment.get_execution_environment()
    >>> env.set_parallelism(2)
    >>> env.from_collection([1, 2, 3]).map(lambda x: x + 1).print()
    >>> env.execute("my job")
    """

    def __init__(self, configuration: Configuration | None = None) -> None:
        self._configuration = Configuration(configuration) if configuration else Configuration()
        # The entry point's settings (``weir run -p``, the cluster's defaults) sit under
        # the program's own, as Flink's ContextEnvironment does.
        self._context_configuration = get_context_configuration()
        entries = {**self._context_configuration, **self._configuration.to_dict()}
        if config_keys.PARALLELISM_DEFAULT.key in entries:
            self._parallelism = config_keys.get(entries, config_keys.PARALLELISM_DEFAULT)
        elif is_executor_registered():
            self._parallelism = config_keys.PARALLELISM_DEFAULT.default
        else:
            # Run locally (the embedded MiniCluster), Flink's LocalStreamEnvironment
            # defaults to one subtask per CPU core.
            self._parallelism = StreamExecutionEnvironment.get_default_local_parallelism()
        self._max_parallelism = config_keys.get(entries, config_keys.MAX_PARALLELISM)
        self._chaining = config_keys.get_with_deprecated_keys(
            entries, config_keys.OPERATOR_CHAINING
        )
        self._buffer_timeout_ms = config_keys.get_with_deprecated_keys(
            entries, config_keys.BUFFER_TIMEOUT
        )
        self._config = ExecutionConfig(self, self._configuration)
        self._transformations: list[Transformation] = []
        self._ids = itertools.count(1)
        self._env_id = uuid.uuid4().hex[:12]
        self._cached_files: dict[str, tuple[str, bool]] = {}
        self._caches: list[IntermediateCache] = []
        self._slot_sharing_groups: dict[str, SlotSharingGroup] = {}

    @staticmethod
    def get_execution_environment(
        configuration: Configuration | None = None,
    ) -> StreamExecutionEnvironment:
        """A new environment; ``configuration`` holds Flink keys such as
        ``parallelism.default``."""
        return StreamExecutionEnvironment(configuration)

    # -- settings -----------------------------------------------------------------------
    def get_config(self) -> ExecutionConfig:
        return self._config

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        if parallelism < 1:
            msg = f"parallelism must be at least 1, got {parallelism}"
            raise ValueError(msg)
        self._parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        return self._parallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        if not 0 < max_parallelism <= _MAX_MAX_PARALLELISM:
            msg = (
                f"maximum parallelism must be in [1, {_MAX_MAX_PARALLELISM}], got {max_parallelism}"
            )
            raise ValueError(msg)
        self._max_parallelism = max_parallelism
        return self

    def get_max_parallelism(self) -> int:
        """The max parallelism set, or -1 if none was (then each operator derives its own)."""
        return self._max_parallelism

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        """How long a partly filled network buffer may wait (ms); 0 flushes after every
        record, -1 only when full."""
        if timeout_millis < -1:
            msg = f"buffer timeout must be -1, 0 or positive, got {timeout_millis}"
            raise ValueError(msg)
        self._buffer_timeout_ms = timeout_millis
        return self

    def get_buffer_timeout(self) -> int:
        return self._buffer_timeout_ms

    def enable_checkpointing(
        self, interval: int, mode: CheckpointingMode | None = None
    ) -> StreamExecutionEnvironment:
        """Checkpoint every ``interval`` ms, EXACTLY_ONCE unless ``mode`` says otherwise
        (PyFlink's ``enable_checkpointing``)::

            >>> env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
        """
        config = self.get_checkpoint_config()
        config.set_checkpoint_interval(interval)
        config.set_checkpointing_mode(mode or CheckpointingMode.EXACTLY_ONCE)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        return CheckpointConfig(self._configuration)

    def get_checkpoint_interval(self) -> int:
        return self.get_checkpoint_config().get_checkpoint_interval()

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.get_checkpoint_config().get_checkpointing_mode()

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        self._chaining = False
        return self

    def is_chaining_enabled(self) -> bool:
        return self._chaining

    def get_checkpointing_consistency_mode(self) -> CheckpointingMode:
        """The guarantee state gets: the checkpointing mode when checkpointing is on,
        AT_LEAST_ONCE when it is off (as Flink 2 reports it)."""
        config = self.get_checkpoint_config()
        if not config.is_checkpointing_enabled():
            return CheckpointingMode.AT_LEAST_ONCE
        return config.get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def set_state_backend(self, state_backend: StateBackend) -> StreamExecutionEnvironment:
        """Sets the state backend that describes how to store operator state: a
        ``HashMapStateBackend`` (the default) or an ``EmbeddedRocksDBStateBackend``.

        Example::

            >>> env.set_state_backend(EmbeddedRocksDBStateBackend(True))
        """
        if not isinstance(state_backend, StateBackend):
            msg = (
                "set_state_backend needs a HashMapStateBackend or an "
                f"EmbeddedRocksDBStateBackend; got {type(state_backend).__name__}"
            )
            raise TypeError(msg)
        self._configuration.remove_config(config_keys.STATE_BACKEND_INCREMENTAL.key)
        for key, value in state_backend._config().items():
            self._configuration.set_string(key, value)
        self._state_backend = state_backend
        return self

    def get_state_backend(self) -> StateBackend | None:
        """The state backend set with ``set_state_backend``, or None."""
        return getattr(self, "_state_backend", None)

    def enable_changelog_state_backend(self, enabled: bool) -> StreamExecutionEnvironment:
        """Kept (``state.changelog.enabled``) and reported: Weir has no changelog state
        backend, so state is checkpointed as it would be without it."""
        self._configuration.set_boolean(config_keys.STATE_CHANGELOG_ENABLED.key, bool(enabled))
        return self

    def is_changelog_state_backend_enabled(self) -> bool | None:
        """None when never set (the cluster's configuration decides)."""
        if not self._configuration.contains_key(config_keys.STATE_CHANGELOG_ENABLED.key):
            return None
        return bool(
            config_keys.get(self._configuration.to_dict(), config_keys.STATE_CHANGELOG_ENABLED)
        )

    def set_default_savepoint_directory(self, directory: str) -> StreamExecutionEnvironment:
        """Where savepoints go by default (``execution.checkpointing.savepoint-dir``)."""
        self._configuration.set_string(config_keys.SAVEPOINT_DIR.key, _normalize_uri(directory))
        return self

    def get_default_savepoint_directory(self) -> str | None:
        directory = self._configuration.get_string(config_keys.SAVEPOINT_DIR.key, "")
        return directory or None

    @staticmethod
    def get_default_local_parallelism() -> int:
        """The parallelism of environments that run locally: one subtask per CPU core
        unless ``set_default_local_parallelism`` said otherwise."""
        return _default_local_parallelism or os.cpu_count() or 1

    @staticmethod
    def set_default_local_parallelism(parallelism: int) -> None:
        global _default_local_parallelism
        if parallelism < 1:
            msg = f"the default local parallelism must be at least 1, got {parallelism}"
            raise ValueError(msg)
        _default_local_parallelism = parallelism

    # -- dependencies and resources ---------------------------------------------------
    def add_python_file(self, file_path: str) -> None:
        """Adds a Python file, package or directory the job's functions import: it is
        shipped with the job and put first on the TaskManagers' ``sys.path``::

            env.add_python_file("/path/to/helpers.py")  # then: from helpers import ...
        """
        _add_to(self._configuration, config_keys.PYTHON_FILES.key, file_path, ",", first=True)

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """Adds an archive (zip, jar, whl, egg, tar, tar.gz or tgz) that is shipped with
        the job and extracted in the working directory of its functions on every
        TaskManager, under ``target_dir`` (the archive's file name when not given)::

            env.add_python_archive("/path/to/data.zip", "data")
            # then, in a function: open("data/data.txt")
        """
        entry = archive_path if target_dir is None else f"{archive_path}#{target_dir}"
        _add_to(self._configuration, "python.archives", entry, ",", first=True)

    def set_python_requirements(
        self, requirements_file_path: str, requirements_cache_dir: str | None = None
    ) -> None:
        """Adds a pip requirements file whose packages are installed on every TaskManager
        for the job's functions to import; with ``requirements_cache_dir``, only from the
        packages in that directory (``pip download -d DIR -r requirements.txt``), without a
        package index. A TaskManager's Python is shared by every job and by Weir: packages
        it has already stay as they are::

            env.set_python_requirements("/path/to/requirements.txt", "/path/to/cache")
        """
        value = requirements_file_path
        if requirements_cache_dir is not None:
            value = f"{requirements_file_path}#{requirements_cache_dir}"
        self._configuration.set_string("python.requirements", value)

    def set_python_executable(self, python_exec: str) -> None:
        """Recorded (``python.executable``) and given to the job's functions in the
        ``python`` environment variable, where PyFlink's workers have it; TaskManagers run
        the Python of their Spark workers (``PYSPARK_PYTHON``) whatever it says."""
        self._configuration.set_string("python.executable", python_exec)

    def add_jars(self, *jars_path: str) -> None:
        """Recorded (``pipeline.jars``); Weir runs no Java code, so jars change nothing."""
        _add_to(self._configuration, "pipeline.jars", ";".join(jars_path), ";")

    def add_classpaths(self, *classpaths: str) -> None:
        """Recorded (``pipeline.classpaths``); Weir runs no Java code."""
        _add_to(self._configuration, "pipeline.classpaths", ";".join(classpaths), ";")

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> None:
        """Flink's distributed cache; PyFlink functions cannot read it, so this only
        records the file."""
        self._cached_files[name] = (file_path, executable)

    def register_slot_sharing_group(
        self, slot_sharing_group: SlotSharingGroup
    ) -> StreamExecutionEnvironment:
        """Registers a group's resource spec; operators name their group with
        ``slot_sharing_group()``. The resources are kept, not used."""
        if not isinstance(slot_sharing_group, SlotSharingGroup):
            msg = (
                "register_slot_sharing_group() needs a SlotSharingGroup; got "
                f"{type(slot_sharing_group).__name__}"
            )
            raise TypeError(msg)
        self._slot_sharing_groups[slot_sharing_group.get_name()] = slot_sharing_group
        return self

    def create_input(self, input_format: Any, type_info: TypeInformation | None = None) -> Any:
        """Java InputFormats do not run in Weir."""
        msg = (
            "create_input() reads through a Java InputFormat, which Weir cannot run; use "
            "from_source() with a Source (FileSource, NumberSequenceSource, ...) or "
            "add_source() with a SourceFunction"
        )
        raise NotImplementedError(msg)

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        """Always True: operators chain whatever their max parallelism."""
        return True

    def close(self) -> None:
        """Release what the environment holds: its transformations and the results its
        cached streams keep (``DataStream.cache()``). Jobs already submitted go on."""
        self._transformations.clear()
        caches, self._caches = self._caches, []
        for cache in caches:
            release_at_exit(cache, False)
            cache.release()
        if caches:
            caches[0].release_root()

    def _cache(self, stream: DataStream) -> CachedDataStream:
        """``stream.cache()``: see ``CachedDataStream``."""
        upstream = stream._transformation
        if not isinstance(upstream, PhysicalTransformation | SideOutputTransformation):
            msg = (
                "Cache can only be called with physical transformation or side output "
                f"transformation; got the {type(upstream).__name__} of {upstream.name!r}"
            )
            raise ValueError(msg)
        root = config_keys.get(self._configuration.to_dict(), config_keys.CACHE_DIR)
        transformation = cache_transformation(
            self._next_id(), upstream, f"{root or tempfile.gettempdir()}/weir-cache-{self._env_id}"
        )
        self._caches.append(transformation.cache)
        release_at_exit(transformation.cache, True)
        return CachedDataStream(self, transformation)

    def configure(self, configuration: Configuration) -> StreamExecutionEnvironment:
        """Apply the settings in ``configuration`` (Flink's keys), as if given to
        ``get_execution_environment``; settings it does not name stay as they are."""
        self._configuration.add_all(configuration)
        given = configuration.to_dict()
        if config_keys.PARALLELISM_DEFAULT.key in given:
            self.set_parallelism(config_keys.get(given, config_keys.PARALLELISM_DEFAULT))
        if config_keys.MAX_PARALLELISM.key in given:
            self._max_parallelism = config_keys.get(given, config_keys.MAX_PARALLELISM)
        chaining, timeout = config_keys.OPERATOR_CHAINING, config_keys.BUFFER_TIMEOUT
        if config_keys.is_set(given, chaining):
            self._chaining = config_keys.get_with_deprecated_keys(given, chaining)
        if config_keys.is_set(given, timeout):
            self._buffer_timeout_ms = config_keys.get_with_deprecated_keys(given, timeout)
        return self

    # -- sources ------------------------------------------------------------------------
    def _next_id(self) -> int:
        return next(self._ids)

    def _add_operator(self, transformation: Transformation) -> None:
        self._transformations.append(transformation)

    def _source(
        self,
        name: str,
        payload: dict[str, Any],
        output_type: TypeInformation | None,
        non_parallel: bool,
    ) -> DataStream:
        t = PhysicalTransformation(
            id=self._next_id(),
            name=name,
            output_type=output_type,
            kind=OperatorKind.SOURCE,
            payload=payload,
            non_parallel=non_parallel,
            parallelism=1 if non_parallel else None,
        )
        return DataStream(self, t)

    def from_collection(
        self, collection: Iterable[Any], type_info: TypeInformation | None = None
    ) -> DataStream:
        """A non-parallel source of the collection's elements, in order."""
        source = CollectionSource(collection, type_info)
        # PyFlink forces the collection source non-parallel: parallelism and max
        # parallelism 1 (what operators chained to it report as their max parallelism).
        return self._source(
            "Collection Source", {"source": source}, type_info, True
        ).force_non_parallel()

    def read_text_file(self, file_path: str, charset_name: str = "UTF-8") -> DataStream:
        """The lines of the text file at ``file_path`` (a path or any fsspec URL), in order,
        as strings."""
        source = TextFileSource(file_path, charset_name)
        return self._source(file_path, {"source": source}, Types.STRING(), True)

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
        """STREAMING (default), BATCH or AUTOMATIC; see ``RuntimeExecutionMode``."""
        if not isinstance(execution_mode, RuntimeExecutionMode):
            msg = f"set_runtime_mode() needs a RuntimeExecutionMode; got {execution_mode!r}"
            raise TypeError(msg)
        self._configuration.set_string(config_keys.RUNTIME_MODE.key, execution_mode.name)
        return self

    def add_source(
        self,
        source_func: SourceFunction,
        source_name: str = "Custom Source",
        type_info: TypeInformation | None = None,
    ) -> DataStream:
        """A non-parallel source running ``source_func.run(ctx)``."""
        if not isinstance(source_func, SourceFunction):
            msg = f"add_source() needs a SourceFunction; got {type(source_func)!r}"
            raise TypeError(msg)
        return self._source(source_name, {"source_function": source_func}, type_info, True)

    def from_source(
        self,
        source: Any,
        watermark_strategy: WatermarkStrategy,
        source_name: str,
        type_info: TypeInformation | None = None,
    ) -> DataStream:
        """A parallel source (``weir.core.source.Source``), e.g. NumberSequenceSource."""
        if not callable(getattr(source, "create_reader", None)):
            msg = f"from_source() needs a Source with create_reader(context); got {type(source)!r}"
            raise TypeError(msg)
        if type_info is None:
            produced = getattr(source, "get_produced_type", None)
            type_info = produced() if callable(produced) else None
        if isinstance(watermark_strategy, WatermarkStrategy):
            watermark_strategy = watermark_strategy._snapshot()
        payload = {"source": source, "watermark_strategy": watermark_strategy}
        return self._source(source_name, payload, type_info, False)

    # -- execution ----------------------------------------------------------------------
    def _job_config(self, job_name: str) -> dict[str, str]:
        # The entry point's settings (``weir run -s``) travel with the job, under the
        # program's own.
        entries = {**self._context_configuration, **self._configuration.to_dict()}
        entries[config_keys.PARALLELISM_DEFAULT.key] = str(self._parallelism)
        entries[config_keys.MAX_PARALLELISM.key] = str(self._max_parallelism)
        entries[config_keys.OPERATOR_CHAINING.key] = "true" if self._chaining else "false"
        entries[config_keys.BUFFER_TIMEOUT.key] = str(self._buffer_timeout_ms)
        entries[config_keys.JOB_NAME.key] = job_name
        entries[config_keys.RUNTIME_MODE.key] = self._resolved_runtime_mode()
        program = _program_command_line()
        if program:
            entries[config_keys.PROGRAM_KEY] = program
        return entries

    def _resolved_runtime_mode(self) -> str:
        mode = config_keys.get(self._configuration.to_dict(), config_keys.RUNTIME_MODE)
        if mode == "STREAMING":
            return mode
        unbounded = [
            t.name for t in _all_transformations(self._transformations) if _is_unbounded_source(t)
        ]
        if mode == "AUTOMATIC":
            return "STREAMING" if unbounded else "BATCH"
        if unbounded:
            msg = (
                f"detected an unbounded source ({', '.join(unbounded)}) with "
                f"'execution.runtime-mode' set to 'BATCH'; this combination is not "
                f"allowed: use STREAMING or AUTOMATIC, or a bounded source"
            )
            raise ValueError(msg)
        return mode

    def _job_name(self, job_name: str | None) -> str:
        if job_name:
            return job_name
        return self._configuration.get_string(config_keys.JOB_NAME.key, "") or DEFAULT_JOB_NAME

    def _stream_graph(self, job_name: str | None = None, clear: bool = True) -> StreamGraph:
        name = self._job_name(job_name)
        cache_writers = resolve_caches(self._transformations, self._next_id) if self._caches else []
        job_config = self._job_config(name)
        graph = build_stream_graph(
            [*self._transformations, *cache_writers],
            job_name=name,
            default_parallelism=self._parallelism,
            default_max_parallelism_setting=self._max_parallelism,
            chaining_enabled=self._chaining,
            adaptive_batch=AdaptiveBatchParallelism.from_config(job_config, self._parallelism),
        )
        graph.config = job_config
        if cache_writers and graph.config[config_keys.RUNTIME_MODE.key] != "BATCH":
            msg = (
                "DataStream.cache() is supported in BATCH execution mode only: call "
                "env.set_runtime_mode(RuntimeExecutionMode.BATCH) before executing a job "
                "that uses a cached stream"
            )
            raise ValueError(msg)
        graph.job_parameters = self._config.get_global_job_parameters()
        if clear:
            self._transformations = []
        return graph

    def _job_graph(self, job_name: str | None = None, clear: bool = True) -> JobGraphResult:
        graph = self._stream_graph(job_name, clear=False)
        result = create_job_graph(graph)
        if clear:
            self._transformations = []
        return result

    def get_execution_plan(self) -> str:
        """The plan as JSON in Flink's shape; the program is not changed or run."""
        return execution_plan_json(self._stream_graph(clear=False), self._parallelism)

    def execute_async(self, job_name: str | None = None) -> JobClient:
        """Submits the job and returns at once with a JobClient, whose methods answer
        with futures as PyFlink's do::

            >>> env.execute_async("job").get_job_execution_result().result()
        """
        return get_executor().submit(self._job_graph(job_name).job_graph)

    def execute(self, job_name: str | None = None) -> JobExecutionResult:
        """Runs the job and waits for it; raises JobExecutionError if it fails."""
        client = get_executor().submit(self._job_graph(job_name).job_graph)
        result: JobExecutionResult = client.get_job_execution_result().result()
        return result

    def _execute_and_collect(
        self, collect: Transformation, job_name: str | None
    ) -> CloseableIterator:
        result = self._job_graph(job_name)
        client = get_executor().submit(result.job_graph)
        return client.collect(result.operator_ids[collect.id])


_default_local_parallelism: int | None = None


def _normalize_uri(directory: str) -> str:
    """``file:///tmp/x`` as Flink's Path writes it: ``file:/tmp/x``."""
    if directory.startswith("file:///"):
        return "file:/" + directory[len("file:///") :]
    return directory


def _all_transformations(roots: list[Transformation]) -> list[Transformation]:
    """``roots`` and everything upstream of them, each once."""
    seen: dict[int, Transformation] = {}
    stack = list(roots)
    while stack:
        t = stack.pop()
        if id(t) not in seen:
            seen[id(t)] = t
            stack.extend(t.inputs)
    return list(seen.values())


def _is_unbounded_source(transformation: Transformation) -> bool:
    """Sources are bounded when they say so (``is_bounded()``); legacy SourceFunctions
    are unbounded, as in Flink."""
    payload = getattr(transformation, "payload", None) or {}
    if getattr(transformation, "kind", None) is not OperatorKind.SOURCE:
        return False
    source = payload.get("source")
    if source is None:
        return True
    is_bounded = getattr(source, "is_bounded", None)
    return not (callable(is_bounded) and is_bounded())


def _program_command_line() -> str:
    """The script and arguments this program was started with (``python job.py a b`` or
    ``weir run job.py a b``), shell-quoted, or "" when it was not started from a script
    (an interactive session, a notebook)."""
    argv = sys.argv
    if not argv or not argv[0].endswith(".py") or not os.path.isfile(argv[0]):
        return ""
    return shlex.join(argv)


def _add_to(
    config: Configuration, key: str, value: str, delimiter: str, first: bool = False
) -> None:
    """Adds ``value`` to a list setting, as PyFlink does: python files go first, jars last."""
    old = config.get_string(key, "").strip()
    if old:
        value = f"{value}{delimiter}{old}" if first else f"{old}{delimiter}{value}"
    config.set_string(key, value)
