"""Loading user code (pickled functions, key selectors, partitioners) in a TaskManager."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import sys
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from typing import Any

import cloudpickle

from weir.core import config

# Unpickling user code imports modules. Tasks of one TaskManager deploy concurrently, and
# two threads importing modules that import each other can see a partially initialised
# module (that is how Python breaks the import deadlock): load user code one at a time.
_LOAD_LOCK = threading.Lock()


def load_user_code(data: bytes) -> Any:
    with _LOAD_LOCK:
        return cloudpickle.loads(data)


def install_python_files(job_config: Mapping[str, str]) -> None:
    """Unpack the job's ``python.files`` (shipped zipped by the client) once per process
    and put them first on ``sys.path``, so its functions import them as in PyFlink. The
    directory is named after the content, so jobs shipping the same files share it."""
    packed = job_config.get(config.PYTHON_FILES_ARCHIVE)
    if not packed:
        return
    data = base64.b64decode(packed)
    directory = os.path.join(
        tempfile.gettempdir(), "weir-python-files", hashlib.sha256(data).hexdigest()[:16]
    )
    with _LOAD_LOCK:
        if not os.path.isdir(directory):
            partial = f"{directory}.{os.getpid()}.{threading.get_ident()}"
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                archive.extractall(partial)  # the job's own files, from its client
            try:
                os.rename(partial, directory)
            except OSError:  # another process unpacked the same files first
                shutil.rmtree(partial, ignore_errors=True)
                if not os.path.isdir(directory):
                    raise
        if directory not in sys.path:
            sys.path.insert(0, directory)
