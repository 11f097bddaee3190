"""``tui-agent serve``'s guard (issue 23): on 127.0.0.1 by default; bound to any other address
the page, its websocket and downloads need the token (refused with 403 without it), which the
printed URL carries and the page keeps as a cookie for its websocket. The browser itself is
tests/test_serve_browser.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from tui_agent.cli.serve import COOKIE, TOKEN_ENV, is_loopback, serve_token
from tui_agent.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 30.0


def test_a_token_is_needed_off_loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    assert serve_token("127.0.0.1", None) is None
    made = serve_token("0.0.0.0", None)
    assert made is not None and len(made) >= 16 and serve_token("0.0.0.0", None) != made
    assert serve_token("0.0.0.0", "a-token-of-my-own") == "a-token-of-my-own"
    monkeypatch.setenv(TOKEN_ENV, "the-environment-token")
    assert serve_token("192.0.2.1", None) == "the-environment-token"
    with pytest.raises(ConfigError, match="at least 16"):
        serve_token("0.0.0.0", "short")


class Served:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui_agent", "--no-warm", "--db", args[0], "serve",
             *args[1:], "--port", "0"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, env=dict(os.environ))
        self.url = ""
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            found = re.search(r"http://\S+", line)
            if found and not self.url:
                self.url = found[0]
                self.ready.set()
        self.ready.set()


@pytest.fixture
def everywhere(tmp_path: Path) -> Iterator[Served]:
    served = Served(str(tmp_path / "s.db"), "--host", "0.0.0.0")
    try:
        assert served.ready.wait(WAIT_S) and served.url
        yield served
    finally:
        served.process.terminate()
        served.process.wait(timeout=WAIT_S)


async def test_off_loopback_the_page_and_its_websocket_need_the_token(
    everywhere: Served,
) -> None:
    parts = urlsplit(everywhere.url)
    token = parse_qs(parts.query)["token"][0]
    local = f"http://127.0.0.1:{parts.port}"
    # unsafe: the jar keeps cookies of an IP address, as a browser does
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(f"{local}/") as refused:
            assert refused.status == 403 and "needs its token" in await refused.text()
        async with session.get(f"{local}/?token=wrong-{token}") as wrong:
            assert wrong.status == 403
        with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
            await session.ws_connect(f"{local}/ws")
        assert handshake.value.status == 403
        async with session.get(f"{local}/?token={token}") as page:
            assert page.status == 200
            assert f'data-session-websocket-url="ws://127.0.0.1:{parts.port}/ws"' in (
                await page.text())
            assert page.cookies[COOKIE].value == token
        async with session.ws_connect(f"{local}/ws?width=80&height=24") as socket:
            assert not socket.closed  # the cookie the page set lets its websocket in


async def test_on_loopback_the_page_opens_without_a_token(tmp_path: Path) -> None:
    served = Served(str(tmp_path / "s.db"))
    try:
        assert served.ready.wait(WAIT_S) and served.url.startswith("http://127.0.0.1:")
        assert "token" not in served.url
        async with aiohttp.ClientSession() as session, session.get(served.url) as page:
            assert page.status == 200
    finally:
        served.process.terminate()
        served.process.wait(timeout=WAIT_S)
