"""Python dependencies packed by the client and unpacked on a TaskManager: python.files on
sys.path, python.archives extracted under their target directories."""

from __future__ import annotations

import base64
import io
import os
import shutil
import sys
import tarfile
import zipfile

import pytest

from weir.core import config as cfg
from weir.core.python_archives import archive_format
from weir.graph.python_dependencies import (
    pack_python_archives,
    pack_python_files,
    pack_python_requirements,
)
from weir.taskmanager.python_dependencies import install_python_files, unpack_python_archives


def names(packed: str) -> list[str]:
    return sorted(zipfile.ZipFile(io.BytesIO(base64.b64decode(packed))).namelist())


def zip_of(path, files: dict[str, str]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


class TestPythonFiles:
    def test_files_and_packages_import_from_the_unpacked_directory(self, tmp_path, monkeypatch):
        (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
        package = tmp_path / "helper_pkg"
        package.mkdir()
        (package / "__init__.py").write_text("VALUE = 1\n")
        packed = pack_python_files(f"{tmp_path / 'helper_mod.py'},file://{package}")
        assert names(packed) == ["helper_mod.py", "helper_pkg/__init__.py"]
        monkeypatch.setattr(sys, "path", list(sys.path))
        monkeypatch.setattr(sys, "modules", dict(sys.modules))
        install_python_files({cfg.PYTHON_FILES_ARCHIVE: packed})
        import helper_mod
        import helper_pkg

        assert helper_mod.VALUE + helper_pkg.VALUE == 42

    def test_a_missing_file_is_named(self, tmp_path):
        with pytest.raises(FileNotFoundError, match="missing.py.*does not exist"):
            pack_python_files(str(tmp_path / "missing.py"))


class TestPythonArchives:
    def test_archives_are_extracted_under_their_target_directories(self, tmp_path, monkeypatch):
        data = zip_of(tmp_path / "data.zip", {"data.txt": "2", "sub/more.txt": "3"})
        folder = tmp_path / "tree"
        (folder / "inner").mkdir(parents=True)
        (folder / "inner" / "x.txt").write_text("x")
        tgz = shutil.make_archive(str(tmp_path / "tree"), "gztar", folder)
        packed = pack_python_archives(f"{data}#data,file://{tgz}")
        # Without a target directory, the archive's file name names it, as in PyFlink.
        assert names(packed) == ["data/data.zip", "tree.tar.gz/tree.tar.gz"]

        job_dir = tmp_path / "job"
        job_dir.mkdir()
        monkeypatch.chdir(job_dir)
        unpack_python_archives({cfg.PYTHON_ARCHIVES_PACKED: packed})
        assert (job_dir / "data" / "data.txt").read_text() == "2"
        assert (job_dir / "data" / "sub" / "more.txt").read_text() == "3"
        assert (job_dir / "tree.tar.gz" / "inner" / "x.txt").read_text() == "x"
        assert sorted(os.listdir(job_dir / "data")) == ["data.txt", "sub"]

    def test_a_target_directory_already_there_is_left_as_it_is(self, tmp_path, monkeypatch):
        packed = pack_python_archives(f"{zip_of(tmp_path / 'a.zip', {'v.txt': 'new'})}#d")
        monkeypatch.chdir(tmp_path)
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "v.txt").write_text("first task's")
        unpack_python_archives({cfg.PYTHON_ARCHIVES_PACKED: packed})
        assert (tmp_path / "d" / "v.txt").read_text() == "first task's"

    def test_a_tar_member_outside_its_directory_is_refused(self, tmp_path, monkeypatch):
        evil = tmp_path / "evil.tar"
        with tarfile.open(evil, "w") as archive:
            info = tarfile.TarInfo("../escaped.txt")
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
        packed = pack_python_archives(f"{evil}#t")
        job_dir = tmp_path / "job"
        job_dir.mkdir()
        monkeypatch.chdir(job_dir)
        with pytest.raises(tarfile.OutsideDestinationError):
            unpack_python_archives({cfg.PYTHON_ARCHIVES_PACKED: packed})
        assert not (tmp_path / "escaped.txt").exists()
        assert not (job_dir / "t").exists()

    @pytest.mark.parametrize(
        ("entry", "error", "message"),
        [
            ("missing.zip#d", FileNotFoundError, "does not exist"),
            ("notes.txt#d", ValueError, "not a zip, jar, whl, egg, tar, tar.gz or tgz"),
            ("a.zip#x/y", ValueError, "one directory name"),
            ("a.zip#d,b.zip#d", ValueError, "two python archives are extracted to 'd'"),
        ],
    )
    def test_bad_archives_are_named(self, tmp_path, entry, error, message):
        (tmp_path / "notes.txt").write_text("")
        zip_of(tmp_path / "a.zip", {})
        zip_of(tmp_path / "b.zip", {})
        value = ",".join(str(tmp_path / e) for e in entry.split(","))
        with pytest.raises(error, match=message):
            pack_python_archives(value)

    def test_formats_as_pyflink_lists_them(self):
        assert [archive_format(n) for n in ("a.zip", "a.JAR", "a.whl", "a.egg")] == ["zip"] * 4
        assert [archive_format(n) for n in ("a.tar", "a.tar.gz", "a.tgz")] == [
            "tar",
            "gztar",
            "gztar",
        ]
        assert archive_format("a.rar") is None


class TestPythonRequirements:
    def test_the_requirements_file_and_the_cache_directory_are_shipped(self, tmp_path):
        requirements = tmp_path / "req.txt"
        requirements.write_text("python-package1==0.0.0\n")
        cache = tmp_path / "cache"
        cache.mkdir()
        (cache / "python-package1-0.0.0.tar.gz").write_bytes(b"sdist")
        packed = pack_python_requirements(f"{requirements}#{cache}")
        assert names(packed) == ["cache/python-package1-0.0.0.tar.gz", "requirements.txt"]
        assert names(pack_python_requirements(str(requirements))) == ["requirements.txt"]

    def test_missing_paths_are_named(self, tmp_path):
        with pytest.raises(FileNotFoundError, match="requirements file .* does not exist"):
            pack_python_requirements(str(tmp_path / "req.txt"))
        (tmp_path / "req.txt").write_text("")
        with pytest.raises(FileNotFoundError, match="cache directory .*pip download"):
            pack_python_requirements(f"{tmp_path / 'req.txt'}#{tmp_path / 'nothing'}")
