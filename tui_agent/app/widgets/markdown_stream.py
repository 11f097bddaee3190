"""An assistant answer that streams as Markdown at a bounded cost.

``MarkdownStream`` is a line-API widget (``render_line`` + ``get_content_height`` over cached
lines of segments, like Textual's ``Log``), not Textual's ``Markdown`` widget, which mounts a
widget per block and was measured far too slow with four panes streaming at 500 tokens/s.
"""

from __future__ import annotations

import asyncio
import copy
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.markdown import Markdown
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from rich.theme import Theme as RichTheme
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from tui_agent.app.widgets.layout_echo import NoLayoutEcho
from tui_agent.app.widgets.markdown_render import FastMarkdown
from tui_agent.app.widgets.packed_lines import Line, PackedLines
from tui_agent.text import block_spans, split_blocks

DARK_CODE_THEME = "monokai"
LIGHT_CODE_THEME = "default"  # pygments' own: dark text on a near-white background

# Elements whose children are inline text only. A block that starts with anything else (a list,
# a quote, a table) gets a blank line from rich above it: the gap that separates it from the
# element before, which belongs to the join between blocks, not to the block.
_INLINE_ONLY = frozenset({"paragraph_open", "heading_open"})
_UNCHANGED = 1 << 30
# rich's ``Markdown`` builds this parser (the same plugins) for every instance, which costs more
# than parsing a block: one is shared here, and each render copies a prototype ``Markdown``.
LIGHT_MARKDOWN_STYLES = RichTheme({"markdown.code": "bold #0b5cad on #e3e8f0"})
# HTML is off: an answer's tags (a small model often starts with ``<message id=…>``, ``<br>``)
# are shown as the text they are, where rich would drop them and leave an empty answer.
_PARSER = (MarkdownIt().enable("strikethrough").enable("table")
           .disable(["html_block", "html_inline"]))
_PROTOTYPES: dict[str, Markdown] = {}


def _markdown(source: str, code_theme: str) -> Markdown:
    """``Markdown(source, code_theme=code_theme)`` without building a parser each time."""
    prototype = _PROTOTYPES.get(code_theme)
    if prototype is None:
        prototype = _PROTOTYPES[code_theme] = FastMarkdown("", code_theme=code_theme)
    markdown = copy.copy(prototype)
    markdown.markup = source
    markdown.parsed = _PARSER.parse(source)
    return markdown


# A rendered line is kept as its segments (packed, for finished blocks: ``PackedLines``), not as
# a ``Strip``: a ``Strip`` carries seven caches (~15 objects the garbage collector tracks), and
# an answer keeps thousands of lines, so Strips made the collector's full passes long (pauses of
# 100-280 ms with four panes streaming, see benchmarks/bench_app.py). A ``Strip`` is made only
# for a line being painted.


@dataclass(slots=True)
class _Part:
    """One rendered piece of the answer: a finished block, the tail, or the whole (finished)."""

    lines: list[Line]
    lead: bool  # rich separates it from the element before by a blank line
    spaced: bool  # rich separates it from the element after by a blank line (all but a rule)


@dataclass(slots=True)
class _Block:
    """A finished block kept by the widget: where its lines are in ``_lines``."""

    lead: bool
    spaced: bool
    start: int
    stop: int


class MarkdownStream(NoLayoutEcho, Widget):
    """An assistant answer streamed as Markdown, at a bounded cost per update.

    Guarantees:

    - ``append`` is cheap: it stores the text and schedules one update for the widget's next
      message cycle; appends made in between are rendered together, once.
    - While streaming, the source is split into finished blocks (text up to a blank line
      outside a code fence, ``tui_agent.text.split_blocks``) and the unfinished tail.
      Each finished block is rendered once per width (and theme) and its lines are kept;
      an update re-renders only the tail. ``blocks_rendered`` counts the block renders.
    - ``finish`` makes the lines equal to rich's ``Markdown`` of the whole source, so no
      per-block approximation (a loose list split at its blank lines, a reference link defined
      in a later block) outlives the stream — at the cost of one parse and of the parts that
      may differ (``render_final``), not of the whole answer again. Where the blocks are
      independent the streamed lines already equal the final ones: nothing jumps at the end.
    - The height is the number of rendered lines (``height: auto``). A layout is requested only
      when that number changes; otherwise only the changed lines are repainted.
    - A width change re-renders lazily, at the next layout or paint, never per append.
    - Lines take the widget's background and colour at paint time (so they follow a pane whose
      background changes on focus), and code blocks a pygments theme chosen by the app theme's
      ``dark`` flag, so light and dark themes both read well.
    - Text selection works as in ``Log``: a partial selection copies the rendered text of the
      selected lines; a selection of the whole widget copies the original Markdown source.

    ``markdown`` is the full source so far (the original Markdown, for copy). ``append`` after
    ``finish`` continues the stream (the answer is unfinished again until the next ``finish``).
    """

    DEFAULT_CSS = """
    MarkdownStream {
        width: 1fr;
        height: auto;
    }
    """

    ALLOW_SELECT = True

    def __init__(
        self,
        markdown: str = "",
        *,
        finished: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._finished = finished
        self._head: list[str] = []  # source already split off as finished blocks
        self._rest = markdown  # the source after them: the tail and text not yet split
        self._source: str | None = markdown  # the joined source, until the next append
        self._block_sources: list[str] = []
        self._blocks: list[_Block] = []  # rendered finished blocks (empty when stale)
        self._lines = PackedLines()  # the finished blocks' lines, with their separators
        self._tail: list[Line] | None = None  # the tail's lines (None: to render)
        self._final: PackedLines | None = None  # the lines once finished
        self._final_task: asyncio.Task[None] | None = None  # that render, off the event loop
        self._split_pending = True  # ``_rest`` holds text not yet split into blocks
        self._width = 0  # the width the strips were rendered at
        self._dark: bool | None = None  # the app theme's flag the code blocks were drawn for
        self._style_checked = False
        self._options: ConsoleOptions | None = None
        self._changed_from = _UNCHANGED  # first line changed since the last repaint request
        self._laid_out_height = -1  # the height last reported to the layout
        self._update_scheduled = False
        self._paint_style: Style | None = None  # the widget's style during one paint
        self._streamed = not finished  # False: made finished (history), never streamed
        self.blocks_rendered = 0
        """How many times a finished block was rendered (a diagnostic: each block renders once
        per width and theme while streaming, not once per append)."""

    # -- the interface -------------------------------------------------------------------------

    @property
    def markdown(self) -> str:
        """The full source so far: the original Markdown (what 'copy' copies)."""
        if self._source is None:
            self._source = "".join(self._head) + self._rest
        return self._source

    @property
    def finished(self) -> bool:
        """Whether the stream ended (``finish`` was called or the widget was made finished)."""
        return self._finished

    def append(self, text: str) -> None:
        """Add streamed text. Cheap: the render happens once per message cycle, not per call."""
        if not text:
            return
        if self._finished:
            self._reopen()
        self._streamed = True
        self._rest += text
        self._source = None
        self._split_pending = True
        self._tail = None
        self._schedule_update()

    def finish(self) -> None:
        """The stream ended: the final lines (``render_final``) are made in a worker thread, so
        a long answer never blocks the event loop; the streamed lines stay on screen until
        they are ready."""
        if self._finished:
            return
        self._finished = True
        self._final = None
        self._schedule_update()

    # -- reading what is shown (tests, selection, benchmarks) --------------------------------

    def flush(self) -> None:
        """Bring the rendering up to date now (``append`` schedules this) and request the
        repaint: a layout if the line count changed, else only the changed lines."""
        self._update_scheduled = False
        if not self.is_mounted:
            return
        width = self.size.width
        if width <= 0:  # not laid out yet: the layout renders at its width
            self.refresh(layout=True)
            return
        self._prepare(width)
        height = self._line_count()
        changed_from, self._changed_from = self._changed_from, _UNCHANGED
        if height != self._laid_out_height:
            self.refresh(layout=True)
        elif changed_from < height:
            self.refresh(Region(0, changed_from, width, height - changed_from))

    def text_lines(self) -> list[str]:
        """The plain text of each rendered line at the current width, trailing spaces removed
        (renders pending text first; empty before the widget's first layout)."""
        width = self.size.width or self._width
        if width <= 0:
            return []
        self._prepare(width)
        return [_text(self._line(y)).rstrip() for y in range(self._line_count())]

    # -- Textual's line API ------------------------------------------------------------------

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._prepare(width)
        self._changed_from = _UNCHANGED  # a layout repaints the whole widget
        self._laid_out_height = self._line_count()
        return self._laid_out_height

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's style walks every ancestor: work it out once per paint, not per line.
        self._paint_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._paint_style = None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        self._prepare(width)
        # The background and colour are applied here, not baked into the cached lines: an
        # ancestor's background can change (a focused pane) without restyling this widget.
        base = self._paint_style or self.rich_style
        if not 0 <= y < self._line_count():
            return Strip.blank(width, base)
        strip = Strip(self._line(y), width).apply_style(base)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(y)) is not None:
            style = self.screen.get_component_rich_style("screen--selection")
            strip = _highlight(strip, span, style)
        return strip.apply_offsets(0, y)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_checked = False  # the theme's dark flag is checked at the next render

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        if selection.start is None and selection.end is None:
            return self.markdown, "\n"
        return selection.extract("\n".join(self.text_lines())), "\n"

    # -- internals -----------------------------------------------------------------------------

    def _schedule_update(self) -> None:
        if self._update_scheduled or not self.is_mounted:
            return
        self._update_scheduled = True
        self.call_next(self.flush)

    def _reopen(self) -> None:
        """``append`` after ``finish``: stream again."""
        self._finished = False
        self._final = None
        self._changed_from = 0

    def _line_count(self) -> int:
        if self._final is not None:
            return len(self._final)
        return len(self._lines) + len(self._tail or ())

    def _line(self, y: int) -> Line:
        if self._final is not None:
            return self._final[y]
        if y < len(self._lines):
            return self._lines[y]
        assert self._tail is not None
        return self._tail[y - len(self._lines)]

    def _prepare(self, width: int) -> None:
        """Render whatever is stale for ``width``: cheap when nothing is."""
        width = max(1, width)
        if not self._style_checked:
            self._style_checked = True
            dark = self.app.current_theme.dark
            if dark != self._dark:
                self._dark = dark
                self._drop_strips()
        if width != self._width:
            self._width = width
            self._options = None
            self._drop_strips()
        if self._final is not None:
            return
        if not self._streamed:  # until the Markdown render is ready: the plain text, cheaply
            if self._finished:
                self._render_final_later()
            if self._tail is None:
                self._tail = plain_strips(self.markdown, width)
                self._changed_from = 0
            return
        if self._block_sources and not self._blocks:  # a new width or theme: all blocks again
            self._lines = PackedLines()
            for source in self._block_sources:
                self._add_block(self._render_block(source))
            self._changed_from = 0
        if self._split_pending:
            self._split_pending = False
            blocks, rest = split_blocks(self._rest)
            if blocks:
                self._head.append(self._rest[: len(self._rest) - len(rest)])
                self._rest = rest
                self._changed_from = min(self._changed_from, len(self._lines))
                for source in blocks:
                    self._block_sources.append(source)
                    self._add_block(self._render_block(source))
        if self._tail is None:
            self._tail = []
            changed_from = len(self._lines)
            if self._rest.strip():
                part = self._render_source(self._rest)
                if self._blocks and _gap_between(self._blocks[-1], part):
                    self._tail.append(self._blank())  # the gap above the tail: not a change
                    changed_from += 1
                self._tail.extend(part.lines)
            self._changed_from = min(self._changed_from, changed_from)
        if self._finished:
            self._settle_final()

    def _settle_final(self) -> None:
        """The stream ended. Where every block (the tail included) starts its own top-level
        element, the lines on screen already are the final ones: kept, nothing rendered.
        Otherwise the final render runs in a worker thread (``render_final``)."""
        if blocks_stand_alone([*self._block_sources, self._rest]):
            self._final = self._lines.copy()
            self._final.extend(self._tail or [])
        else:
            self._render_final_later()

    def _render_final_later(self) -> None:
        """Start the final render of the finished source in a worker thread (once per
        source, width and theme); ``_final`` takes its lines when it is done."""
        if self._final_task is not None or not self.is_mounted:
            return
        source, width, dark = self.markdown, self._width, self._dark
        options = self.app.console.options.update_width(width)
        rendered = self._rendered_blocks()

        async def render() -> None:
            try:
                lines = await asyncio.to_thread(render_final, source, rendered, width, dark,
                                                options, Console(width=width))
            finally:
                self._final_task = None
            if self._finished and (self.markdown, self._width, self._dark) == (source, width,
                                                                                dark):
                self._final = PackedLines()
                self._final.extend(lines)
                self._changed_from = 0
                if self.is_mounted:
                    self.refresh(layout=True)
            elif self._finished and self.is_mounted:
                self.refresh(layout=True)  # the width or theme changed meanwhile: render anew

        self._final_task = asyncio.get_running_loop().create_task(render())

    def _rendered_blocks(self) -> list[tuple[str, _Part]]:
        """The streamed blocks rendered at the current width and theme, with their sources
        (what the final render may reuse)."""
        if len(self._blocks) != len(self._block_sources):
            return []
        return [(source, _Part(self._lines.slice(block.start, block.stop), block.lead,
                               block.spaced))
                for source, block in zip(self._block_sources, self._blocks, strict=True)]

    def on_unmount(self) -> None:
        if self._final_task is not None:
            self._final_task.cancel()

    async def wait_final(self) -> None:
        """Until the finished answer's one-shot render for the current width (if it needs
        one) is on screen: a render that a width change made stale is followed by the next."""
        while True:
            if self._final_task is None and self._finished and self._final is None:
                if not self.is_mounted or self.size.width <= 0:
                    return
                self._prepare(self.size.width)  # starts the render for this width
            task = self._final_task
            if task is None:
                return
            await asyncio.shield(task)

    def _drop_strips(self) -> None:
        self._blocks = []
        self._lines = PackedLines()
        self._tail = None
        self._final = None
        self._changed_from = 0

    def _add_block(self, part: _Part) -> None:
        if self._blocks and _gap_between(self._blocks[-1], part):
            self._lines.append(self._blank())
        start = len(self._lines)
        self._lines.extend(part.lines)
        self._blocks.append(_Block(part.lead, part.spaced, start, len(self._lines)))

    def _render_block(self, source: str) -> _Part:
        self.blocks_rendered += 1
        return self._render_source(source)

    def _blank(self) -> Line:
        return [Segment(" " * self._width)]

    def _render_source(self, source: str) -> _Part:
        """``source`` rendered by rich's ``Markdown`` at the current width (padded to it),
        without the blank line rich puts above a leading list, quote or table."""
        console = self.app.console
        if self._options is None:
            self._options = console.options.update_width(self._width)
        return render_markdown(source, self._width, self._dark, self._options, console)


def plain_strips(source: str, width: int) -> list[Line]:
    """The source as plain wrapped lines: what a history answer shows for the moment its
    Markdown render takes in a worker thread."""
    lines: list[Line] = []
    for line in source.strip("\n").split("\n"):
        text = Text(line)
        wrapped = text.wrap(_PLAIN_CONSOLE, width) if line else [Text("")]
        lines.extend([Segment(part.plain.ljust(width))] for part in wrapped)
    return lines


def _text(line: Line) -> str:
    return "".join(segment.text for segment in line)


_PLAIN_CONSOLE = Console(width=80)


def render_markdown(source: str, width: int, dark: bool | None, options: ConsoleOptions,
                    console: Console) -> _Part:
    """``source`` rendered by rich's ``Markdown`` at ``width``. Safe in a worker thread when
    ``console`` is that thread's own."""
    theme = LIGHT_CODE_THEME if dark is False else DARK_CODE_THEME
    markdown = _markdown(source, theme)
    tokens = markdown.parsed
    if dark is False:  # rich's inline code is "cyan on black": a black box on white
        with console.use_theme(LIGHT_MARKDOWN_STYLES):
            lines = console.render_lines(markdown, options)
    else:
        lines = console.render_lines(markdown, options)
    lead = bool(tokens) and tokens[0].nesting == 1 and tokens[0].type not in _INLINE_ONLY
    if lead and lines and not "".join(segment.text for segment in lines[0]).strip():
        del lines[0]
    spaced = not (tokens and tokens[-1].type == "hr")
    return _Part(lines, lead, spaced)


def render_final(source: str, rendered: list[tuple[str, _Part]], width: int, dark: bool | None,
                 options: ConsoleOptions, console: Console) -> list[Line]:
    """The finished answer's lines, equal to rich's ``Markdown`` of the whole ``source``, at the
    cost of one parse plus the parts whose streamed lines may differ. Safe in a worker thread
    when ``console`` is that thread's own (tests/app/test_markdown_stream.py).

    A run of lines between blank lines (a block, as streamed) that starts a top-level Markdown
    element on its own renders as it does in the whole, so its streamed lines (``rendered``:
    source → part) are kept. Runs inside one element (a loose list split at its blank lines, an
    indented continuation) are rendered again together, and a source that defines reference
    links (which any block may use) is rendered whole."""
    env: dict[str, Any] = {}
    tokens = _PARSER.parse(source, env)
    if env.get("references") or not rendered:
        return render_markdown(source, width, dark, options, console).lines
    starts = [token.map[0] for token in tokens if token.level == 0 and token.nesting >= 0
              and token.map]
    lines = source.split("\n")
    groups: list[list[tuple[int, int]]] = []
    for start, end in block_spans(lines):
        if not "".join(lines[start:end]).strip():
            continue
        element = bisect_right(starts, start) - 1
        if groups and element >= 0 and starts[element] < start:
            groups[-1].append((start, end))  # inside an element an earlier block started
        else:
            groups.append([(start, end)])
    kept = dict(rendered)
    parts: list[_Part] = []
    for group in groups:
        text = "\n".join(lines[group[0][0] : group[-1][1]])
        part = kept.get(text) if len(group) == 1 else None
        parts.append(part or render_markdown(text, width, dark, options, console))
    return join_parts(parts, width)


def join_parts(parts: list[_Part], width: int) -> list[Line]:
    """The lines of top-level parts rendered one by one, joined as rich joins elements."""
    joined: list[Line] = []
    for index, part in enumerate(parts):
        if index and _gap_between(parts[index - 1], part):
            joined.append([Segment(" " * width)])
        joined.extend(part.lines)
    return joined


_LIST_LINE = re.compile(r"^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)", re.MULTILINE)
_HTML_LINE = re.compile(r"^ {0,3}<", re.MULTILINE)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:", re.MULTILINE)


def blocks_stand_alone(blocks: list[str]) -> bool:
    """Whether each block (a run of lines between blank lines, as streamed) surely starts its
    own top-level Markdown element, so that rendering the blocks one by one gives the lines of
    the whole. Conservative: False where a block may continue the one before it — it is
    indented (a list item's continuation, indented code), it is a list item after a block with
    one (a loose list), it follows an HTML block — or where a reference link is defined."""
    previous = ""
    for block in blocks:
        if not block.strip():
            continue
        if _REFERENCE.search(block):
            return False
        if previous and (block[0] in " \t" or _HTML_LINE.search(previous)
                         or (_LIST_LINE.match(block) and _LIST_LINE.search(previous))):
            return False
        previous = block
    return True


def _gap_between(before: _Part | _Block, after: _Part) -> bool:
    """rich separates two top-level elements by a blank line (not after a rule)."""
    return after.lead or before.spaced


def _highlight(strip: Strip, span: tuple[int, int], style: Style) -> Strip:
    """``strip`` with the characters ``span`` (end -1: to the end) drawn in ``style``."""
    text = strip.text
    start, end = span
    end = len(text) if end == -1 else min(end, len(text))
    if start >= end:
        return strip
    cut_start, cut_end = cell_len(text[:start]), cell_len(text[:end])
    before, selected, after = strip.divide([cut_start, cut_end, strip.cell_length])
    selected = Strip(Segment.apply_style(selected, post_style=style), selected.cell_length)
    return Strip.join([before, selected, after])
