"""``tui-agent chat``: a line-based chat on a shared thread.

The chat is a subscriber plus a sender. It subscribes to the thread and renders everything that
happens there — its own runs and those woken from other terminals — and sends each typed line
with ``agent.send_message``, so it is multi-user by construction. Lines are read by a daemon
thread (``input`` blocks), so the event loop keeps streaming while the prompt waits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import queue
import signal
import sys
import threading
import time
from typing import Any

from rich.console import Console
from rich.text import Text

from tui_agent.cli.common import message_of
from tui_agent.cli.render import (
    MarkdownBlock,
    Renderer,
    TerminalEcho,
    author_of,
    badge_colour,
    make_console,
    quiet_terminal,
)
from tui_agent.cli.threads import check_thread, named
from tui_agent.errors import TuiAgentError
from tui_agent.events import is_end
from tui_agent.startup.agents import (
    build_agent,
    check_model,
    is_local_model,
    model_label,
    parse_attrs,
    store_path,
)
from tui_agent.startup.mcp_tools import close_mcp_tools, start_mcp_tools
from tui_agent.text import one_line

HELP = """\
Type a message and press Enter. Commands:
  /queue TEXT   run TEXT after the thread's live run ends (instead of joining it)
  /abort        abort the thread's live run (also one started in another terminal)
  /history [N]  show the last N messages of the thread (default 10)
  /help         this help
  /quit         leave (Ctrl-D too; Ctrl-C quits at the prompt, aborts during an answer)"""
DOUBLE_CTRL_C_S = 2.0  # a second Ctrl-C this soon after an abort quits


class LineReader:
    """``input()`` in a daemon thread, one line per ``read()``; None at end of input."""

    def __init__(self, loop: asyncio.AbstractEventLoop, echo: TerminalEcho) -> None:
        self._loop = loop
        self._echo = echo
        self._prompts: queue.Queue[str] = queue.Queue()
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        threading.Thread(target=self._run, name="tui-agent stdin", daemon=True).start()

    def _run(self) -> None:
        while True:
            prompt = self._prompts.get()
            self._echo.loud()
            try:
                line: str | None = input(prompt)
            except (EOFError, OSError, ValueError):
                line = None
            self._echo.quiet()
            self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
            if line is None:
                return

    async def read(self, prompt: str) -> str | None:
        self._prompts.put(prompt)
        return await self._lines.get()


class Chat:
    def __init__(
        self, args: argparse.Namespace, agent: Any, console: Console, echo: TerminalEcho
    ) -> None:
        self.args = args
        self.echo = echo
        self.agent = agent
        self.console = console
        self.tty = sys.stdin.isatty() and console.is_terminal
        self.renderer = Renderer(console)
        self.attributes = parse_attrs(args.attr, args.as_name)
        self.target = {"resource_id": args.resource, "thread_id": args.thread}
        self.sub: Any = None
        self.quit = asyncio.Event()
        self.prompting = False  # the reader shows the prompt right now
        self._suspended = False  # the prompt line was cleared for incoming output
        self._ended: set[str] = set()
        self._run_ended = asyncio.Event()
        self._waiting_run: str | None = None
        self._abort_at = 0.0
        self._prompt = _prompt(self.attributes.get("name") or args.resource, self.tty)

    # -- life cycle -------------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self.agent.runtime.host()  # it answers what others leave on the store's threads
        self.sub = await self.agent.subscribe_to_thread(**self.target)
        pump = loop.create_task(self._pump(), name="chat pump")
        reader = LineReader(loop, self.echo)
        loop.add_signal_handler(signal.SIGINT, self._on_ctrl_c)
        try:
            while not self.quit.is_set():
                line = await self._read(reader)
                if line is None:
                    break
                await self._handle_line(line.strip())
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await self._shutdown(pump)
        return 0

    async def _read(self, reader: LineReader) -> str | None:
        self.prompting = True
        read = asyncio.ensure_future(reader.read(self._prompt))
        quit_ = asyncio.ensure_future(self.quit.wait())
        try:
            await asyncio.wait((read, quit_), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.prompting = False
            quit_.cancel()
        line = read.result() if read.done() else None
        read.cancel()  # quit while waiting: the line never comes
        if line is None and self.tty:
            self.console.file.write("\n")  # leave the shell's prompt on a line of its own
        return line

    async def _shutdown(self, pump: asyncio.Task[None]) -> None:
        await self.agent.runtime.set_aside_parked()  # waiting for approval: left pending
        local = self.agent.local_runs()
        for output in local:  # a run of this process cannot outlive it: stop it cleanly
            output.abort()
        for output in local:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(output.result(), 5.0)
        self.sub.unsubscribe()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(pump, 1.0)
        self.renderer.close()
        await self.agent.close()
        await close_mcp_tools(self.agent)
        await self.agent.memory.store.close()

    # -- input ------------------------------------------------------------------------------

    async def _handle_line(self, line: str) -> None:
        if not line:
            return
        if line.startswith("/"):
            await self._command(line)
            return
        await self._send(line, queued=False)

    async def _command(self, line: str) -> None:
        name, _, rest = line.partition(" ")
        if name in ("/quit", "/exit", "/q"):
            self.quit.set()
        elif name == "/help":
            self.console.print(Text(HELP, style="dim"))
        elif name == "/queue":
            if rest.strip():
                await self._send(rest.strip(), queued=True)
            else:
                self.renderer.notice("usage: /queue TEXT", "yellow")
        elif name == "/abort":
            aborted = self.sub.abort()
            self.renderer.notice("aborting the live run…" if aborted else "no live run to abort")
        elif name == "/history":
            await self._history(rest.strip())
        else:
            self.renderer.notice(f"unknown command {name}; /help lists them", "yellow")

    async def _send(self, text: str, *, queued: bool) -> None:
        message = message_of(text, self.attributes)
        send = self.agent.queue_message if queued else self.agent.send_message
        try:
            receipt = send(message, **self.target)
            if self.tty:
                self.renderer.hide_echoes.add(receipt.signal.id)  # already on screen as typed
            decision = await receipt.accepted
        except TuiAgentError as error:
            self.renderer.notice(f"✗ {error}", "bold red")
            return
        action, run_id = decision["action"], decision.get("run_id")
        if action == "deliver":
            what = "queued after" if queued else "delivered to"
            self.renderer.notice(f"  ↪ {what} the live run {run_id}")
        elif action in ("persist", "discard"):
            self.renderer.notice(f"  ({action})")
        if run_id is not None:
            await self._wait_for(run_id)

    async def _wait_for(self, run_id: str) -> None:
        """Until that run ends (whoever runs it) or the user quits."""
        self._waiting_run = run_id
        try:
            while run_id not in self._ended and not self.quit.is_set():
                self._run_ended.clear()
                ended = asyncio.ensure_future(self._run_ended.wait())
                quit_ = asyncio.ensure_future(self.quit.wait())
                await asyncio.wait((ended, quit_), return_when=asyncio.FIRST_COMPLETED)
                ended.cancel()
                quit_.cancel()
        finally:
            self._waiting_run = None

    def _on_ctrl_c(self) -> None:
        live = self._waiting_run is not None or self.sub.active_run_id() is not None
        now = time.monotonic()
        if not live or now - self._abort_at < DOUBLE_CTRL_C_S:
            self.quit.set()
            return
        self._abort_at = now
        self.sub.abort()

    # -- output -----------------------------------------------------------------------------

    async def _pump(self) -> None:
        async for chunk in self.sub.stream:
            if self.prompting and self.tty and not self._suspended:
                self.console.file.write("\r\x1b[2K")  # clear the prompt; output goes here
                self._suspended = True
            self.renderer.handle(chunk)
            if is_end(chunk) and chunk.get("run_id"):
                self._ended.add(chunk["run_id"])
                self._run_ended.set()
            if self._suspended and self.sub.active_run_id() is None:
                self._restore_prompt()

    def _restore_prompt(self) -> None:
        self.renderer.close()
        self._suspended = False
        if not self.prompting:
            return
        typed = ""
        with contextlib.suppress(Exception):
            import readline

            typed = readline.get_line_buffer()
        self.console.file.write(_visible(self._prompt) + typed)
        self.console.file.flush()

    async def _history(self, arg: str) -> None:
        try:
            count = int(arg) if arg else 10
        except ValueError:
            self.renderer.notice("usage: /history [N]", "yellow")
            return
        messages = await self.agent.memory.list_messages(self.args.thread, limit=max(count, 1))
        if not messages:
            self.renderer.notice("(no messages on this thread yet)")
        for message in messages:
            self._show_stored(message)

    def _show_stored(self, message: Any) -> None:
        if message.role == "user":
            signal_ = message.metadata.get("signal") or {}
            author = author_of(signal_.get("attributes") or {})
            text = signal_.get("contents", message.content)
            if not isinstance(text, str):
                text = one_line(text)
            self.console.print(Text.assemble((author, f"bold {badge_colour(author)}"), " › ",
                                             text))
        elif message.role == "assistant":
            if message.content:
                self.console.print(MarkdownBlock(str(message.content)))
            if message.metadata.get("aborted"):
                self.console.print(Text("  (aborted)", style="yellow"))
            for call in message.metadata.get("tool_calls") or []:
                function = call.get("function", {})
                self.console.print(Text(f"  ⚙ {function.get('name')}"
                                        f"({one_line(function.get('arguments', ''))})",
                                        style="yellow"))
        elif message.role == "tool":
            self.console.print(Text(f"  ↳ {one_line(message.content)}", style="dim"))


def _prompt(name: str, tty: bool) -> str:
    if not tty:
        return ""
    colour = {"cyan": 36, "magenta": 35, "green": 32, "yellow": 33, "blue": 34,
              "bright_red": 91, "bright_cyan": 96}[badge_colour(name)]
    # \001 … \002 tell readline that the colour codes take no room on the line.
    return f"\001\x1b[1;{colour}m\002{name}\001\x1b[0m\002 › "


def _visible(prompt: str) -> str:
    return prompt.replace("\001", "").replace("\002", "")


async def run_chat(args: argparse.Namespace) -> int:
    console = make_console()
    agent = build_agent(args)
    try:
        return await _chat(args, agent, console)
    except BaseException:  # refused or failed before the chat's own shutdown: close first, or
        await agent.close(timeout=5)  # the store's worker thread dies noisily at exit
        await agent.memory.store.close()
        raise


async def _chat(args: argparse.Namespace, agent: Any, console: Console) -> int:
    console.print(
        Text.assemble(
            ("tui-agent chat", "bold"),
            f" · agent {agent.id} on {model_label(agent)}",
            f" · thread {args.resource}/{args.thread}",
            f" · store {store_path(agent)}",
        ),
        style="dim",
        soft_wrap=True,
    )
    if not await check_thread(agent.memory, args, may_create=True) and named(args):
        # chat -t NEW creates it, and says so (a typo shows, and creates one empty thread)
        await agent.memory.create_thread(args.thread, resource_id=args.resource)
        console.print(Text(f"new thread {args.resource}/{args.thread} created", style="bold"))
    await _warm_up(agent, console)
    for problem in await start_mcp_tools(agent):  # a server that did not start: one line each
        console.print(Text(f"tui-agent: warning: {problem}", style="yellow"), soft_wrap=True)
    if sys.stdin.isatty():
        _enable_line_editing()
        console.print(Text("Type a message · /help · Ctrl-C aborts an answer · Ctrl-D quits",
                           style="dim"))
    # quiet_terminal also restores the terminal if we leave while the reader thread is still
    # inside readline (which had switched it to raw mode).
    with quiet_terminal() as echo:
        return await Chat(args, agent, console, echo).run()


async def _warm_up(agent: Any, console: Console) -> None:
    """Load the model now (the local server, or litellm's import), so the first answer starts
    at once and a missing runtime or key is a clear error before the prompt."""
    label = "loading local model…" if is_local_model(agent) else "loading model…"
    started = time.perf_counter()
    if console.is_terminal:
        console.file.write(f"\x1b[2m{label}\x1b[0m")
        console.file.flush()
    try:
        await check_model(agent, warm=True)
    finally:
        if console.is_terminal:
            console.file.write("\r\x1b[2K")
    console.print(Text(f"model ready in {time.perf_counter() - started:.1f} s", style="dim"))


def _enable_line_editing() -> None:
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 — importing it gives input() editing and history
