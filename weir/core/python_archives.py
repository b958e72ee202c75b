"""The archive formats ``python.archives`` takes, as PyFlink's ``add_python_archive`` lists
them, told apart by the file name as ``shutil.unpack_archive`` tells them."""

from __future__ import annotations

__all__ = ["archive_format"]

# jar, whl and egg files are zips.
_FORMATS = (
    (".tar.gz", "gztar"),
    (".tgz", "gztar"),
    (".tar", "tar"),
    (".zip", "zip"),
    (".jar", "zip"),
    (".whl", "zip"),
    (".egg", "zip"),
)


def archive_format(name: str) -> str | None:
    """``"zip"``, ``"tar"`` or ``"gztar"`` for an archive named ``name``; None for a name
    that is none of PyFlink's formats."""
    lower = name.lower()
    return next((fmt for end, fmt in _FORMATS if lower.endswith(end)), None)
