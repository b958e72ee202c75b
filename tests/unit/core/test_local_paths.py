import os

from weir.core.local_paths import absolute_local_path


def test_local_paths_are_made_absolute_and_urls_are_not():
    assert absolute_local_path("out/part") == os.path.join(os.getcwd(), "out", "part")
    assert absolute_local_path("/data/x") == "/data/x"
    for url in ("file:///data/x", "s3://bucket/x", "memory://root/x"):
        assert absolute_local_path(url) == url
