"""Rendering a thread's live stream in a terminal, shared by ``chat``, ``send`` and ``watch``.

Chunks (``{"type", "run_id", "from", "payload"}``) come from a subscription or a run's output.
In a terminal, answers stream as Markdown: each finished block (text up to a blank line outside a
code fence) is rendered once and kept; only the unfinished last block is re-rendered, by a
``rich.live.Live`` at a bounded rate. When the output is not a terminal, text deltas are written
as they come (plain, flushed) so pipes and tests see the words as they arrive.
"""

from __future__ import annotations

import contextlib
import json
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.text import Text

from tui_agent.events import (
    AbortPayload,
    Chunk,
    ErrorPayload,
    FinishPayload,
    InterruptedPayload,
    SignalPayload,
    StartPayload,
    StepFinishPayload,
    TextDeltaPayload,
    ToolCallApprovalPayload,
    ToolCallPayload,
    ToolResultPayload,
)
from tui_agent.signals.data import signal_text
from tui_agent.text import one_line, split_blocks

REFRESH_PER_SECOND = 8  # the live tail's repaint rate: smooth enough, cheap on 2 cores
_BADGE_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan")


def make_console(file: IO[str] | None = None) -> Console:
    return Console(file=file or sys.stdout, highlight=False, soft_wrap=False)


def badge_colour(author: str) -> str:
    """A colour per author, stable across processes and runs (crc32, not ``hash``)."""
    return _BADGE_COLOURS[zlib.crc32(author.encode()) % len(_BADGE_COLOURS)]


def author_of(attributes: dict[str, Any]) -> str:
    """``name · from`` of a user message (either may be missing)."""
    name = attributes.get("name")
    source = attributes.get("from")
    parts = [str(p) for p in (name, source) if p not in (None, "")]
    return " · ".join(parts) if parts else "user"


class TerminalEcho:
    """Switches the echo of typed keys (and of ``^C``) off while we draw: an echoed key moves
    the cursor behind rich's back, and a live region then repaints one line off. ``loud()``
    turns it back on for a prompt: readline echoes typed text only if the terminal had ECHO on
    when ``input()`` started. ``restore()`` puts back what the terminal had at the start."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._saved: Any = None
        with contextlib.suppress(Exception):
            import termios

            if sys.stdin.isatty():
                fd = sys.stdin.fileno()
                self._saved = termios.tcgetattr(fd)
                self._fd = fd  # only once its settings are saved, to be restored

    def _set(self, off: int) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(Exception):
            import termios

            attrs = termios.tcgetattr(self._fd)
            attrs[3] = (self._saved[3] | termios.ECHO) & ~off
            termios.tcsetattr(self._fd, termios.TCSADRAIN, attrs)

    def quiet(self) -> None:
        import termios

        self._set(termios.ECHO | termios.ECHOCTL)

    def loud(self) -> None:
        import termios

        self._set(termios.ECHOCTL)  # typed text echoes; ^C does not

    def restore(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(Exception):
                import termios

                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)


@contextlib.contextmanager
def quiet_terminal() -> Iterator[TerminalEcho]:
    echo = TerminalEcho()
    echo.quiet()
    try:
        yield echo
    finally:
        echo.restore()


# rich's Markdown drops HTML (a reply of ``<message id="1">hi</message>`` would show "hi" or
# nothing): parsed with HTML off, tags are text (tests/test_render.py).
_LITERAL_HTML = (MarkdownIt().enable("strikethrough").enable("table")
                 .disable(["html_block", "html_inline"]))


class MarkdownBlock:
    """Markdown without the blank line rich puts above a list or a code block (blocks are
    rendered one by one here, so that line would double the gap between them)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.text.strip():
            return
        markdown = Markdown(self.text)
        markdown.parsed = _LITERAL_HTML.parse(self.text)  # tags shown as text, never dropped
        lines = console.render_lines(markdown, options, pad=False)
        while lines and not "".join(segment.text for segment in lines[0]).strip():
            lines.pop(0)
        for line in lines:
            yield from line
            yield Segment.line()


class _Tail(MarkdownBlock):
    """The unfinished last block, rendered when Live repaints (not per delta)."""

    def __init__(self) -> None:
        super().__init__("")


class TextStream:
    """One streamed answer (a step's text). ``feed`` deltas, then ``close`` once."""

    def __init__(self, console: Console, live: bool) -> None:
        self.console = console
        self.text = ""
        self._live_mode = live
        self._done = 0  # characters of ``text`` already rendered as finished blocks
        self._tail = _Tail()
        self._live: Live | None = None
        self._blocks_printed = 0

    def feed(self, delta: str) -> None:
        self.text += delta
        if not self._live_mode:
            self.console.file.write(delta)
            self.console.file.flush()
            return
        self._feed_live()

    def _feed_live(self) -> None:
        if self._live is None:
            self._live = Live(
                self._tail,
                console=self.console,
                refresh_per_second=REFRESH_PER_SECOND,
                vertical_overflow="visible",
                transient=True,  # on stop the tail is erased, then printed once for good
            )
            self._live.start()
        blocks, rest = split_blocks(self.text[self._done :])
        if blocks:
            for block in blocks:
                self._print_block(block)
            self._done = len(self.text) - len(rest)
        if self._too_tall(rest):
            self._go_plain(rest)
            return
        self._tail.text = rest

    def _too_tall(self, tail: str) -> bool:
        """A live region taller than the screen cannot be erased (its top has scrolled away):
        the block would then show twice. Estimated from its length, with a margin."""
        width = max(20, self.console.width)
        lines = sum(len(line) // width + 1 for line in tail.split("\n"))
        return lines * 1.2 > max(4, self.console.height - 6)

    def _go_plain(self, tail: str) -> None:
        """The rest of this answer streams as plain text (a huge block: no Markdown)."""
        assert self._live is not None
        self._tail.text = ""
        self._live.stop()
        self._live = None
        self._live_mode = False
        if self._blocks_printed:
            self.console.file.write("\n")
        self.console.file.write(tail)
        self.console.file.flush()

    def _print_block(self, block: str) -> None:
        if self._blocks_printed:
            self.console.print()
        self.console.print(MarkdownBlock(block))
        self._blocks_printed += 1

    def close(self) -> None:
        if not self._live_mode:
            if self.text and not self.text.endswith("\n"):
                self.console.file.write("\n")
                self.console.file.flush()
            return
        if self._live is None:
            return
        rest = self.text[self._done :]
        self._tail.text = ""
        self._live.stop()
        self._live = None
        if rest.strip():
            self._print_block(rest.strip("\n"))


class Renderer:
    """Turns chunks into terminal output. ``hide_echoes`` holds ids of signals whose echo need
    not be shown (the chat's own lines, already on screen as typed)."""

    def __init__(self, console: Console, *, live: bool | None = None) -> None:
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.hide_echoes: set[str] = set()
        self._stream: TextStream | None = None
        self._headed: set[str] = set()  # runs whose agent header was printed
        self._agents: dict[str, str] = {}  # run id → agent id

    # -- entry point ------------------------------------------------------------------------

    def handle(self, chunk: Chunk | dict[str, Any]) -> None:
        kind = chunk.get("type")
        handler = getattr(self, "_on_" + str(kind).replace("-", "_"), None)
        if handler is not None:
            handler(chunk, chunk.get("payload") or {})

    def close(self) -> None:
        self._end_text()

    # -- helpers ----------------------------------------------------------------------------

    def _end_text(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _header(self, chunk: Chunk) -> None:
        run_id = chunk.get("run_id") or ""
        if run_id in self._headed:
            return
        self._headed.add(run_id)
        agent = self._agents.get(run_id, "agent")
        self.console.print(Text.assemble(("● ", badge_colour(agent)), (agent, "bold")))

    def notice(self, text: str, style: str = "dim") -> None:
        self._end_text()
        self.console.print(Text(text, style=style))

    # -- chunk types ------------------------------------------------------------------------

    def _on_start(self, chunk: Chunk, payload: StartPayload) -> None:
        self._end_text()
        agent_id = payload.get("agent_id")
        if agent_id:
            self._agents[chunk.get("run_id") or ""] = str(agent_id)

    def _on_text_delta(self, chunk: Chunk, payload: TextDeltaPayload) -> None:
        text = payload.get("text") or ""
        if not text:
            return
        if self._stream is None:
            self._header(chunk)
            if not text.strip():
                return  # a leading newline/space would open an empty block
            self._stream = TextStream(self.console, self.live)
            text = text.lstrip("\n")
        self._stream.feed(text)

    def _on_step_finish(self, chunk: Chunk, payload: StepFinishPayload) -> None:
        self._end_text()

    def _on_tool_call(self, chunk: Chunk, payload: ToolCallPayload) -> None:
        self._end_text()
        self._header(chunk)
        name = payload.get("tool_name", "?")
        self.console.print(
            Text.assemble(("  ⚙ ", "yellow"), (str(name), "bold yellow"),
                          (f"({one_line(payload.get('args', {}))})", "yellow"))
        )

    def _on_tool_call_approval(self, chunk: Chunk, payload: ToolCallApprovalPayload) -> None:
        self._end_text()
        approval_id = payload.get("approval_id", "?")
        self.console.print(Text.assemble(
            ("  ⏸ waiting for approval ", "bold magenta"), (str(approval_id), "bold"),
            (f": tui-agent approve {approval_id}   or   tui-agent deny {approval_id}"
             " --reason TEXT", "magenta")))

    def _on_tool_result(self, chunk: Chunk, payload: ToolResultPayload) -> None:
        self._end_text()
        result = payload.get("result")
        if payload.get("is_error"):
            error = result.get("error") if isinstance(result, dict) else result
            self.console.print(Text(f"  ↳ error: {one_line(error)}", style="red"))
        else:
            self.console.print(Text(f"  ↳ {one_line(result)}", style="dim"))

    def _on_finish(self, chunk: Chunk, payload: FinishPayload) -> None:
        self._end_text()
        if payload.get("finish_reason") == "tool-calls":
            self.notice("  (stopped at max_steps with tool calls pending)", "yellow")

    def _on_abort(self, chunk: Chunk, payload: AbortPayload) -> None:
        self.notice("  ⏹ aborted — the partial answer is kept", "yellow")

    def _on_error(self, chunk: Chunk, payload: ErrorPayload) -> None:
        self.notice(f"  ✗ {payload.get('error', 'the run failed')}", "bold red")

    def _on_interrupted(self, chunk: Chunk, payload: InterruptedPayload) -> None:
        self.notice("  ⚠ run interrupted: the process running it stopped", "yellow")

    def _on_data_user_message(self, chunk: Chunk, payload: SignalPayload) -> None:
        if payload.get("id") in self.hide_echoes:
            self._end_text()
            return
        self._end_text()
        author = author_of(payload.get("attributes") or {})
        text = signal_text(payload.get("contents", ""))
        self.console.print(Text.assemble((author, f"bold {badge_colour(author)}"), " › ", text))

    def _on_data_signal(self, chunk: Chunk, payload: SignalPayload) -> None:
        self._end_text()
        kind = payload.get("type", "signal")
        tag = payload.get("tag_name") or kind
        icon = {"state": "◆", "notification": "🔔", "reactive": "↺"}.get(kind, "•")
        attributes = payload.get("attributes") or {}
        label = " ".join(f"{k}={v}" for k, v in attributes.items() if v is not None)
        text = one_line(signal_text(payload.get("contents", "")))
        head = f"{icon} {tag}" + (f" [{label}]" if label else "")
        self.console.print(Text.assemble((head, "cyan"), " ", (text, "dim")))


def chunk_json(chunk: Chunk | dict[str, Any]) -> str:
    """One line of ``watch --json``: the chunk's public keys."""
    public = {key: chunk.get(key) for key in ("type", "run_id", "from", "payload")}
    return json.dumps(public, ensure_ascii=False, default=str)
