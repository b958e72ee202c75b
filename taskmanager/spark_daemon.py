"""PySpark's worker daemon with the TaskManager already imported in it.

Spark starts one daemon per executor (``spark.python.daemon.module``, which the
ResourceManager sets to this module) and forks a Python worker from it for every task. A
lease's worker then finds the TaskManager's modules (gRPC, the network stack, the state
backends) loaded instead of importing them itself: about a second of CPU per lease here,
paid once per executor instead. Importing them starts no thread, which the fork requires
(PySpark's daemon imports its worker module after the fork for that reason).

Spark puts its installation's ``pyspark.zip`` and ``py4j-*.zip`` first on the workers'
``PYTHONPATH``. Those archives hold sources only, so a daemon importing from them compiles
PySpark on every start (0.8 s here) and its workers compile ``pyspark.worker`` again
after the fork. When the interpreter has the very same PySpark (or Py4J) installed, as a
``pip install``-ed Spark does, the archive is taken off ``sys.path`` before anything is
imported and the installed package with its bytecode is used instead; a Spark
installation of another version keeps its archive.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import zipfile


def _version_file(package: str) -> str:
    return f"{package}/version.py"


def _same_package_installed(archive: str, package: str, elsewhere: list[str]) -> bool:
    """Whether ``package`` outside ``archive`` (on the ``elsewhere`` paths) has the same
    ``version.py`` as the one inside it."""
    spec = importlib.machinery.PathFinder.find_spec(package, elsewhere)
    if spec is None or not spec.submodule_search_locations:
        return False
    installed = os.path.join(next(iter(spec.submodule_search_locations)), "version.py")
    try:
        with zipfile.ZipFile(archive) as bundle:
            bundled = bundle.read(_version_file(package))
        with open(installed, "rb") as f:
            return f.read() == bundled
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def prefer_installed_pyspark(path: list[str]) -> None:
    """Take Spark's source archives of PySpark and Py4J off ``path`` (``sys.path``) where
    the same version is installed elsewhere on it."""
    for entry in list(path):
        name = os.path.basename(entry)
        if not name.endswith(".zip"):
            continue
        package = (
            "pyspark" if name.startswith("pyspark") else "py4j" if name.startswith("py4j") else ""
        )
        if not package:
            continue
        elsewhere = [p for p in path if p != entry]
        if _same_package_installed(entry, package, elsewhere):
            path.remove(entry)


if __name__ == "__main__":
    prefer_installed_pyspark(sys.path)

    from pyspark import daemon

    import weir.taskmanager.spark_entry  # noqa: F401  (the lease function and what it imports)

    daemon.manager()
