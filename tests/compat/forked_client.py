"""Client processes for the compat programs, forked from one that has imported Weir
already: each program still runs in a process of its own, with its own working
directory, environment, stdout and stderr, as ``python run_on_cluster.py ...`` would, but
without paying for the imports again (about 0.3 s of CPU a program).

The forking process is multiprocessing's fork server, started once per test process with
the client's modules preloaded; it never opens a channel or starts a thread of Weir's, so
what a child inherits is modules, not state.
"""

from __future__ import annotations

import multiprocessing
import os
import runpy
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_PRELOAD = ["weir.client.executor", "weir.core.executor", "weir.datastream", "weir.common"]
_context: Any = None


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str


def _fork_server() -> Any:
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        _context = context
    return _context


def _child(argv: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = list(argv)
    sys.path[0] = str(Path(argv[0]).parent)  # as `python script.py` puts it first
    code = 0
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)  # as the interpreter would end: what the program left running ends too


def run(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> Finished:
    """``python argv[0] argv[1:]`` in ``cwd`` with ``env``, in a forked client process;
    its exit code and what it printed."""
    with tempfile.TemporaryDirectory(prefix="weir-client-") as scratch:
        out, err = os.path.join(scratch, "stdout"), os.path.join(scratch, "stderr")
        process = _fork_server().Process(target=_child, args=(argv, str(cwd), env, out, err))
        process.start()
        process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join()
            msg = f"{argv[0]} did not end within {timeout} s"
            raise TimeoutError(msg)
        return Finished(
            process.exitcode if process.exitcode is not None else -1,
            Path(out).read_text() if os.path.exists(out) else "",
            Path(err).read_text() if os.path.exists(err) else "",
        )
