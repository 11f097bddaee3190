"""Shared fixtures. Every test runs offline (loopback only), with no real provider keys and with
its store and data directory under tmp_path."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import FakeOpenAIServer

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0:0:0:0:0:0:0:1", "", None}
_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENERATIVE_AI_API_KEY",
    "GEMINI_API_KEY",
)


def _host_of(address: Any) -> Any:
    if isinstance(address, tuple) and address:
        return address[0]
    return None


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    return host in _LOOPBACK or (isinstance(host, str) and host.startswith("127."))


# -- isolation (autouse) ---------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a host other than loopback (or a unix socket) raises at once."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return
        host = _host_of(address)
        if not _is_loopback(host):
            raise ConnectionRefusedError(f"tests are offline: connection to {host!r} blocked")

    def connect(sock: socket.socket, address: Any) -> None:
        check(sock, address)
        return real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        check(sock, address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            raise socket.gaierror(f"tests are offline: lookup of {host!r} blocked")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real provider keys; the store and data dir live in tmp_path."""
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TUI_AGENT_DB", str(tmp_path / "tui-agent.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


# -- fake OpenAI server ----------------------------------------------------------------------
@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def openai_server(
    _openai_server_session: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> FakeOpenAIServer:
    """A fake OpenAI server on 127.0.0.1; OPENAI_BASE_URL points at it, OPENAI_API_KEY is a dummy.
    Script replies with ``openai_server.script(...)``; read ``openai_server.requests``."""
    server = _openai_server_session
    server.reset()
    server.handler = None
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    return server
