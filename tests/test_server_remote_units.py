"""Kernel URLs where connection files were accepted: parsing, tokens kept out of sight, local servers.

Small pure parts; the real servers are in test_server_remote.py, test_check_remote.py and
test_gateway_*.py.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

import pytest

from crane_lsp.commands.kernels import KernelOptionError, KernelSource
from crane_lsp.server.jupyter_sessions import with_connection_file
from crane_lsp.server.kernel_port import where_payload
from crane_lsp.server.kernel_target import is_url, shown, split_token, url_target
from crane_lsp.server.redact import MASK, Redact
from crane_lsp.settings import Settings

TOKEN = "f00dfeedcafe0123456789abcdef"


def _jpserver(runtime: Path, port: int, root: Path, token: str = TOKEN) -> None:
    runtime.mkdir(parents=True, exist_ok=True)
    info = {"url": f"http://localhost:{port}/", "token": token, "root_dir": str(root), "pid": os.getpid()}
    (runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps(info))


def test_urls_and_files_are_told_apart_and_shown_without_secrets() -> None:
    assert is_url("http://h:1/api/kernels/k") and is_url(" HTTPS://h/api/kernels/k")
    assert not is_url("/tmp/kernel-1.json") and not is_url("kernel-1.json")
    pasted = f"http://user:pw@127.0.0.1:8888/lab/api/kernels/abc?token={TOKEN}#x"
    assert shown(pasted) == "http://127.0.0.1:8888/lab/api/kernels/abc"
    assert split_token(pasted) == ("http://127.0.0.1:8888/lab/api/kernels/abc", TOKEN)
    assert shown("/tmp/kernel-1.json") == "/tmp/kernel-1.json"


def test_a_url_gets_its_token_from_the_query_a_local_server_or_the_setting(tmp_path: Path) -> None:
    from crane_lsp.kernel.connection import list_servers

    target = url_target("http://10.0.0.9:8888/api/kernels/k1/channels", "from-setting")
    assert target.where == "http://10.0.0.9:8888/api/kernels/k1" and target.token == "from-setting"
    assert TOKEN not in repr(target) and "from-setting" not in repr(target)
    assert target.connection_file is None and target.kernel_url == target.where
    assert target.label == "kernel at http://10.0.0.9:8888/api/kernels/k1"
    # a local Jupyter server's own URL (localhost spelt otherwise): its token, zero-config
    _jpserver(tmp_path / "rt", 8123, tmp_path)
    local = url_target(
        "http://127.0.0.1:8123/api/kernels/k2", "from-setting", list_servers([tmp_path / "rt"])
    )
    assert local.token == TOKEN
    assert url_target(f"http://h:1/api/kernels/k?token={TOKEN}x", None).token == TOKEN + "x"
    with pytest.raises(ValueError, match="not a kernel URL"):
        url_target("http://h:1/tree/nb.ipynb", None)


def test_jupyterlab_attach_by_id_without_a_file_is_the_kernel_on_the_local_server(tmp_path: Path) -> None:
    """Gateway mode: the kernel runs in Enterprise Gateway, the lab server has no kernel-<id>.json."""
    root = tmp_path / "root"
    _jpserver(tmp_path / "rt", 8124, root)
    args = {
        "notebookUri": f"file://{root}/sub/nb.ipynb",
        "kernelId": "k-1",
        "connectionFile": "kernel-k-1.json",
    }
    resolved = with_connection_file(args, [tmp_path / "rt"])
    assert resolved["connectionFile"] == "http://localhost:8124/api/kernels/k-1"
    (tmp_path / "rt" / "kernel-k-1.json").write_text("{}")  # a local file wins
    assert with_connection_file(args, [tmp_path / "rt"])["connectionFile"] == str(
        tmp_path / "rt" / "kernel-k-1.json"
    )
    url = {"notebookUri": "file:///x.ipynb", "kernelUrl": " http://h:1/api/kernels/z "}
    assert with_connection_file(url, [])["connectionFile"] == "http://h:1/api/kernels/z"


def test_status_names_a_url_as_kernel_url_and_a_file_as_connection_file() -> None:
    from crane_lsp.kernel.transport_relay import RelayTarget
    from crane_lsp.server.kernel_target import KernelTarget

    target = url_target(f"http://h:1/api/kernels/z?token={TOKEN}", None)
    assert where_payload(target) == {
        "connectionFile": None,
        "kernelUrl": "http://h:1/api/kernels/z",
        "relayed": False,
    }
    assert where_payload(KernelTarget("/tmp/k.json")) == {
        "connectionFile": "/tmp/k.json",
        "kernelUrl": None,
        "relayed": False,
    }
    relay = RelayTarget(send_request=None, notebook_uri="file:///n.ipynb")  # type: ignore[arg-type]
    assert where_payload(relay) == {"connectionFile": None, "kernelUrl": None, "relayed": True}
    assert where_payload(None)["relayed"] is False


def test_the_token_setting_is_never_shown_and_logs_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings.model_validate({"jupyterToken": TOKEN, "jupyterServerUrl": "http://h:1"})
    assert settings.jupyter_token is not None and settings.jupyter_token.get_secret_value() == TOKEN
    assert TOKEN not in repr(settings) and TOKEN not in settings.model_dump_json()
    redact = Redact()
    redact.secrets.add(TOKEN)
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "sent %s", (f"token={TOKEN}",), None)
    redact.filter(record)
    assert record.getMessage() == f"sent token={MASK}"


def test_check_takes_the_token_from_the_environment_or_a_file_never_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_TOKEN", "env-token")
    ns = argparse.Namespace(jupyter_server="http://127.0.0.1:9/base/", token_file=None)
    source = KernelSource.from_args(ns)
    assert source.server_url == "http://127.0.0.1:9/base/" and source.token == "env-token"
    assert "env-token" not in repr(source)
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    assert (
        KernelSource.from_args(argparse.Namespace(jupyter_server="http://h:1", token_file=str(path))).token
        == TOKEN
    )
    with pytest.raises(KernelOptionError, match="without a query"):
        KernelSource.from_args(
            argparse.Namespace(jupyter_server=f"http://h:1/?token={TOKEN}", token_file=None)
        )
    with pytest.raises(KernelOptionError, match="cannot read"):
        KernelSource.from_args(
            argparse.Namespace(jupyter_server="http://h:1", token_file=str(tmp_path / "no"))
        )
    with pytest.raises(KernelOptionError, match="is for --jupyter-server"):
        KernelSource.from_args(argparse.Namespace(jupyter_server=None, token_file=str(path)))
    assert not KernelSource.from_args(argparse.Namespace(jupyter_server=None, token_file=None)).remote
