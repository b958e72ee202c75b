"""How Kubernetes high availability finds its API server: a kubeconfig (its context, its
token or client certificate, inline data written to private files), the pod's
ServiceAccount, and the errors that say what to set."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
import yaml

from weir.core.errors import ConfigurationError
from weir.core.highavailability.kubernetes import connection
from weir.core.highavailability.kubernetes.connection import (
    from_kubeconfig,
    in_cluster,
    resolve_connection,
)


def kubeconfig(path: Path, user: dict[str, object], **cluster: object) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://10.0.0.1:6443", **cluster}}
                ],
                "users": [{"name": "u", "user": user}],
                "contexts": [
                    {"name": "main", "context": {"cluster": "c", "user": "u"}},
                    {"name": "other", "context": {"cluster": "c"}},
                ],
                "current-context": "main",
            }
        )
    )
    return path


class TestKubeconfig:
    def test_a_token_and_a_ca_file_relative_to_the_kubeconfig(self, tmp_path: Path):
        path = kubeconfig(
            tmp_path / "config", {"token": "abc"}, **{"certificate-authority": "ca.crt"}
        )
        found = from_kubeconfig(path)
        assert found.server == "https://10.0.0.1:6443"
        assert found.bearer_token() == "abc"
        assert found.ca_file == str(tmp_path / "ca.crt")
        assert "context main" in found.source

    def test_inline_data_goes_to_private_files_removed_on_close(self, tmp_path: Path):
        data = {
            "client-certificate-data": base64.b64encode(b"CERT").decode(),
            "client-key-data": base64.b64encode(b"KEY").decode(),
        }
        path = kubeconfig(
            tmp_path / "config",
            data,
            **{"certificate-authority-data": base64.b64encode(b"CA").decode()},
        )
        found = from_kubeconfig(path)
        assert found.client_key is not None and found.ca_file is not None
        assert Path(found.client_key).read_bytes() == b"KEY"
        assert Path(found.ca_file).read_bytes() == b"CA"
        assert stat.S_IMODE(Path(found.client_key).stat().st_mode) == 0o600
        found.close()
        assert not Path(found.client_key).exists()

    def test_a_token_file_is_read_at_each_use(self, tmp_path: Path):
        (tmp_path / "token").write_text("first\n")
        found = from_kubeconfig(kubeconfig(tmp_path / "config", {"tokenFile": "token"}))
        assert found.bearer_token() == "first"
        (tmp_path / "token").write_text("rotated\n")
        assert found.bearer_token() == "rotated"

    def test_a_credential_plugin_is_refused_saying_what_to_give_instead(self, tmp_path: Path):
        path = kubeconfig(tmp_path / "config", {"exec": {"command": "aws"}})
        with pytest.raises(ConfigurationError, match="give it a token"):
            from_kubeconfig(path)

    def test_an_unknown_context_is_named(self, tmp_path: Path):
        path = kubeconfig(tmp_path / "config", {"token": "abc"})
        with pytest.raises(ConfigurationError, match="no context named 'nope'"):
            from_kubeconfig(path, "nope")


class TestResolve:
    def test_in_a_pod_the_service_account(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        (tmp_path / "token").write_text("sa-token")
        (tmp_path / "ca.crt").write_text("CA")
        monkeypatch.setattr(connection, "SERVICE_ACCOUNT_DIR", tmp_path)
        found = resolve_connection(
            {}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
        )
        assert found.server == "https://10.96.0.1:443"
        assert found.bearer_token() == "sa-token"
        assert found.ca_file == str(tmp_path / "ca.crt")

    def test_kubernetes_config_file_wins_over_the_pod(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ):
        (tmp_path / "token").write_text("sa-token")
        monkeypatch.setattr(connection, "SERVICE_ACCOUNT_DIR", tmp_path)
        path = kubeconfig(tmp_path / "config", {"token": "from-file"})
        found = resolve_connection(
            {"kubernetes.config.file": str(path)}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}
        )
        assert found.bearer_token() == "from-file"

    def test_then_kubeconfig_then_the_home_directory(self, tmp_path: Path):
        home = tmp_path / "home"
        (home / ".kube").mkdir(parents=True)
        kubeconfig(home / ".kube" / "config", {"token": "home"})
        other = kubeconfig(tmp_path / "other", {"token": "env"})
        assert resolve_connection({}, {"KUBECONFIG": str(other), "HOME": str(home)}).token == "env"
        assert resolve_connection({}, {"HOME": str(home)}).token == "home"

    def test_nothing_found_says_what_to_set(self, tmp_path: Path):
        with pytest.raises(ConfigurationError, match=r"kubernetes\.config\.file"):
            resolve_connection({}, {"HOME": str(tmp_path)})

    def test_an_ipv6_service_address_is_bracketed(self, tmp_path: Path):
        (tmp_path / "token").write_text("t")
        found = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1"}, tmp_path)
        assert found.server == "https://[fd00::1]:443"
