"""Importing a package that only some settings need, with a one-line error when it is
missing.

Weir's own dependencies are installed with it; a package can still be absent (an
installation made with ``pip install --no-deps``, a vendored environment), and a setting
that needs it would otherwise end its process in a ``ModuleNotFoundError`` traceback.
``require`` turns that into a ``MissingDependencyError`` saying which setting needs
which package and how to install it, which the CLI and the master print as one line.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from weir.core.errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, *, needed_for: str, requirement: str) -> ModuleType:
    """Import ``module`` and return it.

    ``needed_for`` says what needs it (``"high-availability.type: zookeeper"``),
    ``requirement`` is what to install (``"kazoo==2.11.0"``). Raises
    ``MissingDependencyError`` when the module, or one it imports, is not installed:

    >>> require("kazoo.client", needed_for="ZooKeeper HA", requirement="kazoo")  # doctest: +SKIP
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        # The distribution to install is the top-level package's.
        missing = (exc.name or module).partition(".")[0]
        msg = (
            f"{needed_for} needs the Python package {missing!r}, which is not installed "
            f"in {sys.executable or 'this Python'}; install it with 'pip install {requirement}'"
        )
        raise MissingDependencyError(msg) from exc
