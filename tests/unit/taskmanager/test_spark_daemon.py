"""Which PySpark a worker daemon imports: Spark's source archive on the workers'
PYTHONPATH is dropped only for the very same installed version."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark

from weir.taskmanager.spark_daemon import prefer_installed_pyspark

INSTALLED = Path(pyspark.__file__).parent
SITE = str(INSTALLED.parent)


def _archive(tmp_path: Path, name: str, version_py: bytes | None) -> str:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as bundle:
        bundle.writestr("pyspark/__init__.py", b"")
        if version_py is not None:
            bundle.writestr("pyspark/version.py", version_py)
    return str(path)


def test_the_archive_of_the_installed_version_is_dropped(tmp_path: Path) -> None:
    archive = _archive(tmp_path, "pyspark.zip", (INSTALLED / "version.py").read_bytes())
    path = [str(tmp_path), archive, SITE]
    prefer_installed_pyspark(path)
    assert path == [str(tmp_path), SITE]


def test_the_archive_of_another_version_is_kept(tmp_path: Path) -> None:
    archive = _archive(tmp_path, "pyspark.zip", b'__version__: str = "3.0.0"\n')
    path = [archive, SITE]
    prefer_installed_pyspark(path)
    assert path == [archive, SITE]


def test_an_archive_without_a_version_or_nothing_installed_is_kept(tmp_path: Path) -> None:
    unversioned = _archive(tmp_path, "pyspark.zip", None)
    path = [unversioned, SITE]
    prefer_installed_pyspark(path)
    assert path == [unversioned, SITE]
    versioned = _archive(tmp_path, "pyspark-x.zip", (INSTALLED / "version.py").read_bytes())
    alone = [versioned, str(tmp_path / "empty")]
    prefer_installed_pyspark(alone)
    assert alone == [versioned, str(tmp_path / "empty")]


def test_other_archives_are_left_alone(tmp_path: Path) -> None:
    other = str(tmp_path / "deps.zip")
    with zipfile.ZipFile(other, "w") as bundle:
        bundle.writestr("deps/__init__.py", b"")
    path = [other, SITE]
    prefer_installed_pyspark(path)
    assert path == [other, SITE]
