"""``tui-agent serve``: the app in a browser, through textual-serve, for teammates without a
terminal. Each page opened runs its own app process (``python -m tui_agent`` on the same store,
resource, thread and agent options), which the page drives over a websocket.

Bound to 127.0.0.1 by default (``--host``, ``--port``). Bound to any other address it needs a
token, which the page must present: ``--token``, else ``$TUI_AGENT_SERVE_TOKEN``, else one made
up and printed in the URL to share. A request without it (the page, its websocket, a download)
is refused with 403; the page's URL carries it once (``?token=…``) and the page keeps it in a
cookie of its own for its websocket. On 127.0.0.1 a token is optional (checked if given).
Tested by tests/test_serve.py (tokens, refusals) and tests/test_serve_browser.py (a real
Chromium typing into a pane)."""

from __future__ import annotations

import argparse
import asyncio
import hmac
import ipaddress
import os
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from tui_agent.cli.render import make_console
from tui_agent.errors import ConfigError

COOKIE = "tui_agent_token"
TOKEN_ENV = "TUI_AGENT_SERVE_TOKEN"
Handler = Callable[[Any], Awaitable[Any]]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_token(host: str, given: str | None) -> str | None:
    """The token the page must present: the one given, else (off loopback only) a new one."""
    token = given or os.environ.get(TOKEN_ENV) or None
    if token is not None and len(token) < 16:
        raise ConfigError("serve: the token must be at least 16 characters")
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    return token


def app_command(args: argparse.Namespace) -> str:
    """The command each page runs: the app on this store, resource, thread and agent."""
    argv = [sys.executable, "-m", "tui_agent", "--resource", args.resource,
            "--thread", args.thread]
    if args.db:
        argv += ["--db", str(args.db)]
    for flag, value in (("--agent", args.agent), ("--agent-name", args.agent_name),
                        ("--model", args.model), ("--as", args.as_name)):
        if value:
            argv += [flag, value]
    for pair in args.attr or []:
        argv += ["--attr", pair]
    if args.tools is not None:
        argv.append("--tools" if args.tools else "--no-tools")
    if args.no_warm:
        argv.append("--no-warm")
    return shlex.join(argv)


def make_server(command: str, token: str | None) -> Any:
    """The textual-serve server of ``command``, its page and websocket behind ``token``."""
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server

    def presented(request: Any) -> bool:
        if token is None:
            return True
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        return hmac.compare_digest(given.encode(), token.encode())

    def guarded(handler: Handler) -> Handler:
        async def handle(request: Any) -> Any:
            if not presented(request):
                raise web.HTTPForbidden(text="tui-agent serve: this page needs its token: open "
                                             "the URL `tui-agent serve` printed (…?token=…)\n")
            return await handler(request)
        return handle

    class GuardedServer(Server):
        async def index(self, request: Any) -> Any:
            """The page, its websocket on the host the browser asked for (not the bind
            address: 0.0.0.0 is no address to connect to)."""
            base = f"{request.scheme}://{request.host}"
            context = {
                "font_size": 16,
                "app_websocket_url": f"{'wss' if request.secure else 'ws'}://{request.host}/ws",
                "config": {"static": {"url": f"{base}/static/"}},
                "application": {"name": self.title},
            }
            response = aiohttp_jinja2.render_template("app_index.html", request, context)
            if token is not None:
                response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
            return response

        def web_app(self) -> Any:
            app = web.Application()
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes([
                web.get("/", guarded(self.index), name="index"),
                web.get("/ws", guarded(self.handle_websocket), name="websocket"),
                web.get("/download/{key}", guarded(self.handle_download), name="download"),
                web.static("/static", self.statics_path, name="static"),
            ])
            return app

    return GuardedServer(command, title="tui-agent")


async def run_serve(args: argparse.Namespace) -> int:
    from aiohttp import web

    token = serve_token(args.host, args.token)
    server = make_server(app_command(args), token)
    runner = web.AppRunner(server.web_app(), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, args.host, args.port)
        try:
            await site.start()
        except OSError as error:
            raise ConfigError(f"serve: cannot listen on {args.host}:{args.port}: "
                              f"{error.strerror or error}") from None
        host, port = runner.addresses[0][:2]
        if ipaddress.ip_address(host).is_unspecified:  # every address: name this machine
            host = socket.gethostname()
        shown = f"[{host}]" if ":" in str(host) else host
        url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
        print(f"serving the app on {url}", flush=True)
        make_console(sys.stderr).print(
            f"[dim]{args.resource}/{args.thread} · each page runs its own app · "
            "Ctrl-C to stop[/dim]")
        await _until_stopped()
    finally:
        await runner.cleanup()
    return 0


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    try:
        await stop.wait()
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)
