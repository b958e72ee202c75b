"""Shipping the user's own modules with the job.

cloudpickle pickles a function or class *by reference* when its module can be imported,
and TaskManagers then import that module. A job's helper modules (next to the script,
or a test module) are not installed where the TaskManagers run, so they are pickled *by
value*, as the script itself (``__main__``) always is. Installed packages (stdlib,
site-packages) and Weir's own are still pickled by reference.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import cloudpickle

from weir.core.user_modules import is_user_module


@contextlib.contextmanager
def shipping_user_modules() -> Iterator[None]:
    """While open, every loaded user module is pickled by value. Scoped, because the
    registration is global to cloudpickle and other pickling in this process (Spark's,
    for one) must not change."""
    registered = _register_user_modules()
    try:
        yield
    finally:
        for module_name in registered:
            cloudpickle.unregister_pickle_by_value(sys.modules[module_name])


def _register_user_modules() -> list[str]:
    registered: list[str] = []
    already = cloudpickle.list_registry_pickle_by_value()
    for name, module in list(sys.modules.items()):
        if "." in name or name in already or not is_user_module(name, module):
            continue
        try:
            cloudpickle.register_pickle_by_value(module)
        except ValueError:  # not importable under that name: pickled by value already
            continue
        registered.append(name)
    return registered
