"""Which loaded modules are the user's own: neither the standard library, nor an installed
package, nor Weir. The client ships them with a job (pickled by value); a TaskManager
unloads those a job imported when the job leaves it."""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
from types import ModuleType

_OURS = frozenset({"weir", "dispatcher", "resourcemanager", "jobmanager", "taskmanager", "proto"})


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(p for p in sysconfig.get_paths().values() if p)
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    roots.add(site.getusersitepackages() if hasattr(site, "getusersitepackages") else "")
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


def is_user_module(name: str, module: ModuleType) -> bool:
    """``module`` (loaded as ``name``) comes from a file of the user's: not built in, not
    under the interpreter's or an installed package's directories, not Weir's. The
    program's own ``__main__`` is not one: it is never imported by name."""
    if name == "__main__" or name.split(".", maxsplit=1)[0] in _OURS:
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return False
    return not os.path.realpath(path).startswith(_installed_roots())
