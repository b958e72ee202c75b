"""``webhdfs://namenode:port/path``: HDFS through the NameNode's WebHDFS REST API, as fsspec's
``WebHDFS`` with what checkpoints, savepoints, high-availability storage and the file
connectors rely on. Registered for the ``webhdfs`` protocol through the ``fsspec.specs``
entry point, so ``fsspec.open`` and ``url_to_fs`` pick it up in every process that has Weir.

What it changes, and why:

- A path made a URL again keeps the NameNode's address (``webhdfs://host:port/p``, not
  fsspec's ``webhdfs:///p``): state handles and checkpoint pointers are URLs read in other
  processes.
- Calls act as the Hadoop user a Hadoop client would be: ``HADOOP_USER_NAME``, else the
  login user (simple authentication; fsspec's default is the anonymous ``dr.who``, which
  may not write anywhere). Give ``user`` (``webhdfs://user@host:port/p``), a delegation
  ``token`` or ``kerberos=True`` through storage options to choose otherwise.
- ``mv`` renames with HDFS's rename2 (``renameoptions=OVERWRITE``): a rename that cannot
  be done raises instead of answering ``false`` unnoticed, and a file replaces the one at
  its destination, as ``os.rename`` does.
- The NameNode's errors become the OSErrors a local file system raises
  (FileNotFoundError, FileExistsError, PermissionError, ``ENOTEMPTY``), and removing a
  missing path raises FileNotFoundError.
- ``cat_file`` reads a whole file with two requests (OPEN, then the DataNode's answer),
  not three (fsspec asks for the file's status first).
- ``flush()`` sends what is buffered to the DataNode at once (hflush, as Flink's
  ``RecoverableFsDataOutputStream.persist`` needs): a checkpoint records how many bytes of an
  in-progress file are written, and after a failure those bytes must be there. A file is
  created with its first bytes in one request, and appended to after.

Needs only ``requests`` and the NameNode's HTTP port (9870 on Hadoop 3); data goes to and
from the DataNodes' HTTP ports, where the NameNode redirects.
"""

from __future__ import annotations

import errno
import getpass
import io
import os
from typing import Any

from fsspec.implementations.webhdfs import WebHDFile, WebHDFS

# The NameNode's Java exception -> the OSError a local file system raises for it.
_REMOTE_ERRORS: dict[str, tuple[type[OSError], int]] = {
    "FileNotFoundException": (FileNotFoundError, errno.ENOENT),
    "FileAlreadyExistsException": (FileExistsError, errno.EEXIST),
    "AccessControlException": (PermissionError, errno.EACCES),
    "SecurityException": (PermissionError, errno.EACCES),
    "PathIsNotEmptyDirectoryException": (OSError, errno.ENOTEMPTY),
    "ParentNotDirectoryException": (NotADirectoryError, errno.ENOTDIR),
}


def hadoop_user() -> str:
    """The user a Hadoop client acts as under simple authentication (Hadoop's own rule)."""
    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


class WebHdfsFileSystem(WebHDFS):  # type: ignore[misc]
    """fsspec's WebHDFS, as the module docstring describes."""

    protocol = ("webhdfs", "webHDFS")

    def __init__(self, host: str, port: int = 9870, **kwargs: Any) -> None:
        if self._cached:
            return
        anonymous = not any(kwargs.get(k) for k in ("user", "token", "kerberos", "proxy_to"))
        if anonymous:
            kwargs["user"] = hadoop_user()
        super().__init__(host, port=port, **kwargs)
        self.authority = f"{host}:{port}"

    def unstrip_protocol(self, name: str) -> str:
        if name.startswith(("webhdfs://", "webHDFS://")):
            return name
        return f"webhdfs://{self.authority}/{name.lstrip('/')}"

    def _call(
        self,
        op: str,
        method: str = "get",
        path: str | None = None,
        data: Any = None,
        redirect: bool = True,
        **kwargs: Any,
    ) -> Any:
        reply = self.session.request(
            method=method.upper(),
            url=self._apply_proxy(self._url_of(path)),
            params={**kwargs, **self.pars, "op": op.upper()},
            data=data,
            allow_redirects=redirect,
        )
        if reply.status_code >= 400:
            _raise_remote(reply, op, path)
        return reply

    def _url_of(self, path: str | None) -> str:
        from urllib.parse import quote  # noqa: PLC0415 (as fsspec quotes)

        stripped = self._strip_protocol(path) if path is not None else ""
        return str(self.url) + quote(stripped, safe="/=")

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        if start is not None or end is not None:
            return bytes(super().cat_file(path, start=start, end=end, **kwargs))
        # OPEN and the DataNode's answer: two requests, where opening a file object asks
        # the NameNode for the file's status first.
        reply = self._call("OPEN", path=path, redirect=False)
        if "Location" in reply.headers:
            reply = self.session.get(self._apply_proxy(reply.headers["Location"]))
            if reply.status_code >= 400:
                _raise_remote(reply, "OPEN", path)
        return bytes(reply.content)

    def mv(self, path1: str, path2: str, **kwargs: Any) -> None:
        self._call(
            "RENAME",
            method="put",
            path=path1,
            destination=self._strip_protocol(path2),
            renameoptions="OVERWRITE",
        )

    def rm(self, path: str | list[str], recursive: bool = False, **kwargs: Any) -> None:
        for one in [path] if isinstance(path, str) else path:
            reply = self._call(
                "DELETE", method="delete", path=one, recursive="true" if recursive else "false"
            )
            if not reply.json().get("boolean", False):
                msg = f"no such file or directory in HDFS: {one}"
                raise FileNotFoundError(errno.ENOENT, msg)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        if not exist_ok and self.exists(path):
            raise FileExistsError(errno.EEXIST, f"{path} exists in HDFS")
        reply = self._call("MKDIRS", method="put", path=path)
        if not reply.json().get("boolean", False):
            raise FileExistsError(errno.EEXIST, f"{path} exists in HDFS and is no directory")

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self.makedirs(path, exist_ok=True)

    def _open(
        self,
        path: str,
        mode: str = "rb",
        *,
        block_size: int | None = None,
        autocommit: bool = True,
        replication: int | None = None,
        permissions: int | None = None,
        **kwargs: Any,
    ) -> WebHdfsFile:
        return WebHdfsFile(
            self,
            path,
            mode=mode,
            block_size=block_size or self.blocksize,
            tempdir=self.tempdir,
            autocommit=autocommit,
            replication=replication,
            permissions=permissions,
        )


class WebHdfsFile(WebHDFile):  # type: ignore[misc]
    """A file in HDFS: created with its first bytes, appended to after; every ``flush``
    reaches the DataNode."""

    buffer: io.BytesIO
    offset: int | None
    _created: bool = False

    def flush(self, force: bool = False) -> None:
        if not force and self.writable() and not self.closed and self.buffer.tell():
            # Past what AbstractBufferedFile defers: a chunk of any size may be appended.
            if self.offset is None:
                self.offset = 0
                self._initiate_upload()
            self._upload_chunk(final=False)
            self.offset += self.buffer.seek(0, 2)
            self.buffer = io.BytesIO()
            return
        super().flush(force=force)

    def _initiate_upload(self) -> None:
        # Nothing to do yet: the first chunk creates the file (one request, not three).
        self._created = False

    def _upload_chunk(self, final: bool = False) -> bool:
        data = self.buffer.getvalue()
        if not self._created and "a" not in self.mode:
            reply = self.fs._call("CREATE", "put", self.path, redirect=False, overwrite="true")
            target = self.fs._apply_proxy(reply.headers["Location"])
            self.fs.session.put(
                target, data=data, headers={"content-type": "application/octet-stream"}
            ).raise_for_status()
            self._created = True
            return True
        if not data:
            return True
        reply = self.fs._call("APPEND", "post", self.path, redirect=False)
        target = self.fs._apply_proxy(reply.headers["Location"])
        self.fs.session.post(
            target, data=data, headers={"content-type": "application/octet-stream"}
        ).raise_for_status()
        return True


def _raise_remote(reply: Any, op: str, path: str | None) -> None:
    """Raise the OSError for a WebHDFS error reply, naming the call and the path."""
    try:
        remote = reply.json()["RemoteException"]
        kind, message = str(remote["exception"]), str(remote["message"])
    except (ValueError, KeyError, TypeError):
        kind, message = "", reply.text[:500]
    error, code = _REMOTE_ERRORS.get(kind, (OSError, errno.EIO))
    if kind == "IllegalArgumentException":
        msg = f"WebHDFS {op} {path}: {message}"
        raise ValueError(msg)
    detail = f"WebHDFS {op} {path} failed ({reply.status_code} {kind or 'error'}): {message}"
    raise error(code, detail)
