"""Loading user code (pickled functions, key selectors, partitioners) in a TaskManager."""

from __future__ import annotations

import threading
from typing import Any

import cloudpickle

# Unpickling user code imports modules. Tasks of one TaskManager deploy concurrently, and
# two threads importing modules that import each other can see a partially initialised
# module (that is how Python breaks the import deadlock): load user code one at a time.
_LOAD_LOCK = threading.Lock()


def load_user_code(data: bytes) -> Any:
    with _LOAD_LOCK:
        return cloudpickle.loads(data)
