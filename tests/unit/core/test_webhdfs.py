"""WebHdfsFileSystem without a cluster: it is what fsspec opens for webhdfs://, it turns
paths back into URLs that name the NameNode, and it acts as the Hadoop user."""

from __future__ import annotations

import fsspec
import pytest

from weir.core.webhdfs import WebHdfsFileSystem


def test_fsspec_opens_webhdfs_urls_with_weirs_file_system() -> None:
    assert fsspec.get_filesystem_class("webhdfs") is WebHdfsFileSystem


def test_a_path_becomes_a_url_naming_its_namenode() -> None:
    fs, path = fsspec.core.url_to_fs("webhdfs://namenode.example:9870/weir/chk-1/_metadata")
    assert path == "/weir/chk-1/_metadata"
    assert fs.unstrip_protocol(path) == "webhdfs://namenode.example:9870/weir/chk-1/_metadata"


def test_it_acts_as_the_hadoop_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_USER_NAME", "etl")
    fs = WebHdfsFileSystem("nn-of-the-user-test", 9870, skip_instance_cache=True)
    assert fs.pars["user.name"] == "etl"
    given = WebHdfsFileSystem("nn-of-the-user-test", 9870, user="ops", skip_instance_cache=True)
    assert given.pars["user.name"] == "ops"
