"""Job and pipeline keys: parallelism, runtime mode, Python execution, bundles."""

from __future__ import annotations

from weir.core.config_option import (
    ConfigOption,
    _option,
    _parse_bool,
    _positive_duration_ms,
    _positive_int,
    parse_duration_ms,
    parse_memory_bytes,
)

# --- job and pipeline -------------------------------------------------------------
PARALLELISM_DEFAULT = _option(
    "parallelism.default", 1, _positive_int, "Parallelism of operators that set none."
)
MAX_PARALLELISM = _option(
    "pipeline.max-parallelism",
    -1,
    int,
    "Default max parallelism (number of key groups); -1 derives it from the parallelism.",
)
OPERATOR_CHAINING = _option(
    "pipeline.operator-chaining.enabled", True, _parse_bool, "Chain operators where possible."
)
BUFFER_TIMEOUT = _option(
    "execution.buffer-timeout.interval",
    100,
    parse_duration_ms,
    "How long a partly filled network buffer may wait before it is sent (ms). "
    "0 sends after every record batch, -1 only when full.",
)
OPERATOR_CHAINING_DEPRECATED = _option(
    "pipeline.operator-chaining",
    True,
    _parse_bool,
    "Deprecated name of pipeline.operator-chaining.enabled, still read as Flink reads it.",
)
BUFFER_TIMEOUT_DEPRECATED = _option(
    "execution.buffer-timeout",
    100,
    parse_duration_ms,
    "Deprecated name of execution.buffer-timeout.interval, still read as Flink reads it.",
)
BUFFER_TIMEOUT_ENABLED = _option(
    "execution.buffer-timeout.enabled",
    True,
    _parse_bool,
    "If false, buffers are sent only when full (the same as a timeout of -1).",
)
JOB_NAME = _option("pipeline.name", "", str, "The job name.")
PROGRAM_KEY = "weir.internal.program"
"""Set by the client: the program and its arguments as it was started (shell-quoted), for
the ``weir run -s`` command a failed job suggests; absent when not started from a script."""
AUTO_WATERMARK_INTERVAL = _option(
    "pipeline.auto-watermark-interval",
    200,
    parse_duration_ms,
    "How often periodic watermark generators emit (ms); 0 turns periodic watermarks off.",
)
PYTHON_BUNDLE_SIZE = _option(
    "python.fn-execution.bundle.size",
    1000,
    _positive_int,
    "PyFlink's bundle size, the most records a task pushes through its operator chain as "
    "one batch: a source polls at most this many at once and a larger network buffer is "
    "processed in parts of this size, with timers, periodic watermarks and due flushes "
    "served in between. 1 makes every record its own batch.",
)
PYTHON_BUNDLE_TIME = _option(
    "python.fn-execution.bundle.time",
    1000,
    _positive_duration_ms,
    "PyFlink's bundle time (ms): the longest a source function's records wait to be pushed "
    "through the chain as one batch. With periodic watermarks a batch is also cut after one "
    "pipeline.auto-watermark-interval, so a watermark can fall between records produced "
    "further apart than that.",
)
PYTHON_OPERATOR_CHAINING = _option(
    "python.operator-chaining.enabled",
    True,
    _parse_bool,
    "PyFlink's Python operator chaining: a Python function that is the only consumer of the "
    "Python function before it (forward edge, same parallelism) runs fused with it and "
    "reads its records as they were made; elsewhere records are coded with their declared "
    "type (Rows named, maps in Java HashMap order, FLOATs of 32 bits, values checked). "
    "false codes every operator's output. Weir's own operator chaining is not affected.",
)
PYTHON_FILES = _option(
    "python.files",
    "",
    str,
    "Python files, packages or directories the job's functions import (comma-separated, "
    "as env.add_python_file() sets it): shipped with the job and put on the TaskManagers' "
    "sys.path.",
)
PYTHON_FILES_ARCHIVE = "weir.internal.python-files"
"""Set by the client: the files of python.files, zipped and base64-encoded."""
PYTHON_ARCHIVES = _option(
    "python.archives",
    "",
    str,
    "Archives shipped with the job (comma-separated `path` or `path#target_dir`, as "
    "env.add_python_archive() sets them; zip, jar, whl, egg, tar, tar.gz or tgz): each is "
    "extracted in the job's working directory on every TaskManager, under its target "
    "directory (without one, the archive's file name), where functions read its files by "
    "relative paths.",
)
PYTHON_ARCHIVES_PACKED = "weir.internal.python-archives"
"""Set by the client: the archives of python.archives, zipped and base64-encoded."""
PYTHON_REQUIREMENTS = _option(
    "python.requirements",
    "",
    str,
    "A pip requirements file, optionally followed by `#` and a directory of the packages to "
    "install (as env.set_python_requirements() sets it): installed with pip on every "
    "TaskManager (from that directory alone when given) for the job's functions to import. "
    "A TaskManager's Python is shared by every job and by Weir, so packages it has already "
    "stay as they are.",
)
PYTHON_REQUIREMENTS_PACKED = "weir.internal.python-requirements"
"""Set by the client: the requirements file and its packages, zipped and base64-encoded."""
PYTHON_EXECUTABLE = _option(
    "python.executable",
    "python",
    str,
    "The Python interpreter of the job's functions, as env.set_python_executable() sets it. "
    "TaskManagers run their Spark workers' Python (PYSPARK_PYTHON) whatever it says; the job's "
    "functions find the value in the `python` environment variable, where PyFlink's workers "
    "have it.",
)
OBJECT_REUSE = _option(
    "pipeline.object-reuse",
    False,
    _parse_bool,
    "Flink's object reuse switch; records are Python objects handed on as they are "
    "whatever it says.",
)
CLOSURE_CLEANER_LEVEL = _option(
    "pipeline.closure-cleaner-level",
    "RECURSIVE",
    str.upper,
    "Flink's closure cleaner; kept and reported only (functions are pickled whole).",
    ("none", "top_level", "recursive"),
)
AUTO_GENERATE_UIDS = _option(
    "pipeline.auto-generate-uids",
    True,
    _parse_bool,
    "Flink's switch for generated operator uids; kept and reported only.",
)


def parse_map(text: str) -> dict[str, str]:
    """Flink's map syntax: ``key:value,key2:value2``; a part holding , : or ' is quoted
    with ' (a quote inside doubled)."""
    entries: dict[str, str] = {}
    for part in _split_quoted(str(text), ","):
        if not part.strip():
            continue
        pieces = _split_quoted(part, ":")
        if len(pieces) != 2:
            msg = f"{part!r} is not a key:value pair (in {text!r})"
            raise ValueError(msg)
        entries[_unquote(pieces[0].strip())] = _unquote(pieces[1].strip())
    return entries


def _split_quoted(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == "'":
            quoted = not quoted
        if char == separator and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


SORTED_INPUTS_MEMORY = _option(
    "execution.sorted-inputs.memory",
    128 * 1024 * 1024,
    parse_memory_bytes,
    "BATCH mode: how much of a keyed input a task sorts in memory before it writes a "
    "sorted run to disk in the job's working directory (Flink's key; 128 mb as Flink's "
    "default). Estimated from the records' pickled size.",
)
CACHE_DIR = _option(
    "execution.cache.dir",
    "",
    str,
    "Where DataStream.cache() keeps cached results: any fsspec URL that the TaskManagers and "
    "the client reach (a shared one on a cluster of several hosts). Empty: the system's "
    "temporary directory of the client's host, which serves embedded and one-host clusters.",
)
GLOBAL_JOB_PARAMETERS: ConfigOption[dict[str, str]] = _option(
    "pipeline.global-job-parameters",
    {},
    parse_map,
    "What RuntimeContext.get_job_parameter returns: key:value pairs, comma-separated.",
)
RUNTIME_MODE = _option(
    "execution.runtime-mode",
    "STREAMING",
    str.upper,
    "STREAMING, BATCH, or AUTOMATIC (BATCH when every source is bounded). In BATCH mode "
    "keyed aggregations emit only their final value per key, at the end of the input.",
    ("streaming", "batch", "automatic"),
)
# --- BATCH mode: the parallelism of operators that set none (Flink's adaptive batch
# scheduler, whose keys and defaults these are) ------------------------------------------
ADAPTIVE_AUTO_PARALLELISM_ENABLED = _option(
    "execution.batch.adaptive.auto-parallelism.enabled",
    True,
    _parse_bool,
    "BATCH mode: decide the parallelism of operators that set none from the volume of data "
    "they consume (Flink's adaptive batch scheduler). false runs them at the job's "
    "parallelism, as STREAMING mode does.",
)
ADAPTIVE_AUTO_PARALLELISM_MIN_PARALLELISM = _option(
    "execution.batch.adaptive.auto-parallelism.min-parallelism",
    1,
    _positive_int,
    "BATCH mode: the lowest parallelism decided for an operator that sets none.",
)
ADAPTIVE_AUTO_PARALLELISM_MAX_PARALLELISM = _option(
    "execution.batch.adaptive.auto-parallelism.max-parallelism",
    -1,
    int,
    "BATCH mode: the highest parallelism decided for an operator that sets none, and the "
    "max parallelism (number of key groups) of such an operator that sets no max "
    "parallelism; -1: the job's parallelism (parallelism.default or env.set_parallelism), "
    "as Flink falls back to it.",
)
ADAPTIVE_AUTO_PARALLELISM_AVG_DATA_VOLUME_PER_TASK = _option(
    "execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task",
    16 * 1024 * 1024,
    parse_memory_bytes,
    "BATCH mode: the data volume one subtask of an operator that sets no parallelism is "
    "meant to consume (16 mb as Flink's default); the operator's parallelism is the volume "
    "of its inputs (broadcast inputs aside) divided by it, rounded up, within the min and "
    "max parallelism. Volumes are estimated before the job runs (see the README).",
)
ADAPTIVE_AUTO_PARALLELISM_DEFAULT_SOURCE_PARALLELISM = _option(
    "execution.batch.adaptive.auto-parallelism.default-source-parallelism",
    -1,
    int,
    "BATCH mode: the parallelism of a parallel source that sets none (at most the max "
    "parallelism; a FileSource runs one subtask per file up to it); -1: the max parallelism.",
)
