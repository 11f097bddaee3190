"""MarkdownStream: streamed Markdown equals the one-shot render whatever the chunk boundaries,
loses no text mid-stream, re-wraps on a width change, and renders each finished block once."""

from __future__ import annotations

import gc
import random
import re
from typing import Any

import pytest
from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.geometry import Offset
from textual.pilot import Pilot
from textual.selection import Selection

from tui_agent.app.widgets import markdown_stream
from tui_agent.app.widgets.markdown_render import FastMarkdown
from tui_agent.app.widgets.markdown_stream import (
    MarkdownStream,
    blocks_stand_alone,
    join_parts,
    render_final,
    render_markdown,
)
from tui_agent.app.widgets.packed_lines import PackedLines
from tui_agent.text import split_blocks

ANSWERS = {
    "fence": (
        "Here is the fix:\n\n"
        "```python\n"
        "def add(a, b):\n"
        "\n"
        "    return a + b\n"
        "```\n\n"
        "Run it with `python fix.py` and check."
    ),
    "lists": (
        "Steps so far:\n\n"
        "- clone the repo\n"
        "- install deps\n"
        "- run the tests\n\n"
        "Then:\n\n"
        "1. open a PR\n"
        "2. wait for review\n"
        "3. merge it"
    ),
    "table": (
        "Results:\n\n"
        "| name | passed | failed |\n"
        "|------|-------:|-------:|\n"
        "| unit | 120 | 0 |\n"
        "| e2e | 14 | 2 |\n\n"
        "Two e2e failures remain."
    ),
    "headings": (
        "# Release plan\n\n"
        "We ship on **Friday** after the freeze.\n\n"
        "## Risks\n\n"
        "The migration touches *every* table, so we run it twice.\n\n"
        "### Owner\n\n"
        "Ana owns the rollout."
    ),
    "nested": (
        "Layout:\n\n"
        "- app\n"
        "  - widgets\n"
        "    - markdown stream\n"
        "  - screens\n"
        "- core\n\n"
        "Done."
    ),
    "inline": (
        "Call `agent.generate()` with `max_steps=3`; the `Run` object has `.text` and "
        "`.usage` and a very long line that wraps at sixty columns for sure."
    ),
}
WIDTH = 60


class Host(App[None]):
    CSS = "#box { height: 1fr; overflow: hidden; }"

    def compose(self) -> ComposeResult:
        yield Vertical(id="box")


def words(text: str) -> list[str]:
    """The words of Markdown source or of rendered text (a fence's info string is not shown)."""
    shown = (line for line in text.split("\n") if not line.lstrip().startswith(("```", "~~~")))
    return re.findall(r"\w+", "\n".join(shown))


def is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(word in it for word in needle)


async def final_lines(widget: MarkdownStream) -> list[str]:
    """A finished widget's lines once its one-shot render (in a worker thread) is in."""
    widget.text_lines()  # starts the render if it has not started
    await widget.wait_final()
    return widget.text_lines()


async def streamed_widget(app: Host, pilot: Pilot[None], text: str = "") -> MarkdownStream:
    """A fresh widget, laid out, with ``text`` streamed into it one character at a time."""
    widget = MarkdownStream()
    await app.query_one("#box").mount(widget)
    await pilot.pause()
    for char in text:
        widget.append(char)
        widget.flush()
    return widget


async def reference_lines(app: Host, pilot: Pilot[None], text: str) -> list[str]:
    """The lines of a widget made at once with the whole text, finished."""
    reference = MarkdownStream(text, finished=True)
    await app.query_one("#box").mount(reference)
    await pilot.pause()
    lines = await final_lines(reference)
    await reference.remove()
    return lines


@pytest.mark.parametrize("name", list(ANSWERS))
async def test_every_chunk_boundary_matches_the_one_shot_render(name: str) -> None:
    text = ANSWERS[name]
    finished_blocks, _ = split_blocks(text)
    expected_words = words("\n".join(finished_blocks))
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        box = app.query_one("#box")
        widgets = [MarkdownStream() for _ in range(len(text) + 1)]
        await box.mount_all(widgets)
        await pilot.pause()  # one layout: every widget gets its width
        reference = await reference_lines(app, pilot, text)
        assert reference and all(len(line) <= WIDTH for line in reference)
        for i, widget in enumerate(widgets):
            assert widget.size.width == WIDTH
            for chunk in (text[:i], text[i:]):
                widget.append(chunk)
                widget.flush()  # render between the chunks, as the next repaint would
            streamed = widget.text_lines()
            assert widget.markdown == text
            assert is_subsequence(expected_words, words("\n".join(streamed))), (i, streamed)
            # The blocks here are independent, so the streamed lines already are the final
            # ones: nothing jumps when the stream ends.
            assert streamed == reference, i
            widget.finish()
            assert widget.finished
            assert widget.text_lines() == reference, i  # at once: the streamed lines stay
            assert await final_lines(widget) == reference, i
        await box.remove_children()


async def test_lines_are_rich_markdowns_own() -> None:
    """The widget parses with a shared parser: its lines stay those of rich's ``Markdown``."""
    text = "\n\n".join(ANSWERS.values())
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        lines = await reference_lines(app, pilot, text)
        options = app.console.options.update_width(WIDTH)
        rendered = app.console.render_lines(Markdown(text), options, pad=False)
        assert lines == ["".join(s.text for s in line).rstrip() for line in rendered]


async def test_char_by_char_matches_and_keeps_every_finished_block() -> None:
    text = "\n\n".join(ANSWERS.values())
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        reference = await reference_lines(app, pilot, text)
        widget = MarkdownStream()
        await app.query_one("#box").mount(widget)
        await pilot.pause()
        for i, char in enumerate(text):
            widget.append(char)
            widget.flush()
            if text[i + 1 : i + 3] == "\n\n" or i == len(text) - 1:
                blocks, _ = split_blocks(text[: i + 1])
                shown = words("\n".join(widget.text_lines()))
                assert is_subsequence(words("\n".join(blocks)), shown), i
        assert widget.text_lines() == reference
        widget.finish()
        assert await final_lines(widget) == reference
        await pilot.pause()  # the real paint path agrees with text_lines()
        assert widget.size.height == len(reference)
        painted = [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]
        assert painted == reference


async def test_width_change_rewraps() -> None:
    text = ANSWERS["inline"] + "\n\n" + ANSWERS["lists"] + "\n\nand a tail still being streamed"
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        streaming = MarkdownStream(text)
        done = MarkdownStream(text, finished=True)
        await app.query_one("#box").mount_all([streaming, done])
        await pilot.pause()
        wide = streaming.text_lines()
        assert max(len(line) for line in wide) > 30
        assert wide == await final_lines(done)
        renders = streaming.blocks_rendered

        await pilot.resize_terminal(30, 40)
        await pilot.pause()
        narrow = streaming.text_lines()
        assert streaming.size.width == 30
        assert max(len(line) for line in narrow) <= 30
        assert len(narrow) > len(wide)
        assert narrow == await final_lines(done)
        assert streaming.size.height == len(narrow)  # the layout got the new height
        assert streaming.blocks_rendered == 2 * renders  # each block once more, for the width

        streaming.append(" with more words")
        await pilot.pause()
        assert streaming.blocks_rendered == 2 * renders
        assert "more words" in " ".join(streaming.text_lines())


MIXED = (
    "Plan:\n\n"
    "- first, a loose item\n\n"
    "- second, with a nested list:\n"
    "  - nested one\n"
    "  - nested two\n\n"
    "- third\n\n"
    "| step | owner |\n|------|-------|\n| build | ana |\n| ship | bo |\n\n"
    "```python\ndef ship():\n\n    return 'v2.4'\n```\n\n"
    "1. numbered and loose\n\n2. again\n\nDone, with a last line that wraps at narrow widths."
)


@pytest.mark.parametrize("sizes", [(40, 72, 28, 55), (80, 33, 61)])
async def test_resizing_while_it_streams_ends_as_the_final_width_renders_it(
    sizes: tuple[int, ...],
) -> None:
    """Width changes at any moment of a stream (a terminal resize, a scrollbar, a panel
    opening) never raise, and the finished answer is the one its last width renders from
    scratch (a loose list once crashed here: its blocks were kept as a plain list)."""
    app = Host()
    async with app.run_test(size=(WIDTH, 60)) as pilot:
        widget = await streamed_widget(app, pilot)
        cuts = [len(MIXED) * (k + 1) // (len(sizes) + 1) for k in range(len(sizes))]
        start = 0
        for cut, width in zip(cuts, sizes, strict=True):
            for char in MIXED[start:cut]:
                widget.append(char)
                widget.flush()
            start = cut
            await pilot.resize_terminal(width, 60)
            await pilot.pause()
            assert widget.text_lines()  # rendered at the new width mid-stream
        widget.append(MIXED[start:])
        widget.finish()
        widget.text_lines()  # the final render starts in its worker thread...
        await pilot.resize_terminal(sizes[0], 60)  # ... and the width changes under it
        await pilot.pause()
        shown = await final_lines(widget)
        assert widget.size.width == sizes[0]
        assert shown == await reference_lines(app, pilot, MIXED)


async def test_appending_to_the_tail_renders_finished_blocks_once() -> None:
    blocks = 40
    text = "".join(f"Paragraph {k} has some words in it.\n\n" for k in range(blocks))
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        widget = MarkdownStream()
        await app.query_one("#box").mount(widget)
        await pilot.pause()
        widget.append(text)
        widget.flush()
        assert widget.blocks_rendered == blocks
        for k in range(200):
            widget.append(f" w{k}")
            widget.flush()
        assert widget.blocks_rendered == blocks
        assert widget.text_lines()[-1].endswith("w199")
        for k in range(3):  # through the real update path (scheduled by append)
            widget.append(f"\n\nlast {k}")
            await pilot.pause()
        assert widget.blocks_rendered == blocks + 3  # the tail became a block each time
        assert widget.text_lines()[-1] == "last 2"


async def test_layout_only_when_the_line_count_changes() -> None:
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        widget = MarkdownStream("First paragraph.\n\nshort")
        await app.query_one("#box").mount(widget)
        await pilot.pause()
        calls: list[dict[str, Any]] = []
        real_refresh = widget.refresh

        def spy(*regions: Any, **kwargs: Any) -> Any:
            calls.append({"regions": regions, **kwargs})
            return real_refresh(*regions, **kwargs)

        widget.refresh = spy  # type: ignore[method-assign]
        widget.append(" tail")  # same line count: repaint the tail's line only
        widget.flush()
        assert len(calls) == 1 and not calls[0].get("layout")
        (region,) = calls[0]["regions"]
        assert (region.y, region.height) == (2, 1)

        calls.clear()
        widget.append("\n\nA new paragraph.")  # more lines: a layout
        widget.flush()
        assert calls and calls[0].get("layout") is True
        await pilot.pause()
        assert widget.size.height == 5


async def test_selection_copies_rendered_text_or_the_whole_source() -> None:
    text = "# Title\n\nSome **bold** words.\n\n- one\n- two"
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        widget = MarkdownStream(text, finished=True)
        await app.query_one("#box").mount(widget)
        await pilot.pause()
        lines = await final_lines(widget)
        assert widget.allow_select
        widget.text_select_all()
        assert app.screen.get_selected_text() == text  # the whole widget: its Markdown
        y = lines.index("Some bold words.")
        app.screen.selections = {widget: Selection(Offset(5, y), Offset(14, y + 2))}
        assert app.screen.get_selected_text() == "bold words.\n\n • one"
        await pilot.pause()
        selected = widget.render_line(y)
        styles = {segment.style for segment in selected if segment.text.strip()}
        assert len(styles) > 1  # the selected span is drawn differently


def code_background(widget: MarkdownStream) -> int:
    y = next(i for i, line in enumerate(widget.text_lines()) if "return" in line)
    segment = next(s for s in widget.render_line(y) if "return" in s.text)
    assert segment.style is not None and segment.style.bgcolor is not None
    red, green, blue = segment.style.bgcolor.get_truecolor()
    return (red + green + blue) // 3


async def test_code_theme_follows_light_and_dark_app_themes() -> None:
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        app.theme = "textual-dark"
        widget = MarkdownStream(ANSWERS["fence"])
        await app.query_one("#box").mount(widget)
        await pilot.pause()
        assert code_background(widget) < 128
        blank = widget.render_line(len(widget.text_lines()))  # past the end: the background
        app.theme = "textual-light"
        await pilot.pause()
        assert code_background(widget) > 128
        assert widget.render_line(len(widget.text_lines())) != blank  # lines took the new bg


async def test_lines_follow_an_ancestors_background() -> None:
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        widget = MarkdownStream("A short paragraph.", finished=True)
        box = app.query_one("#box")
        await box.mount(widget)
        await pilot.pause()
        box.styles.background = "rgb(200,0,0)"  # this widget's own styles do not change
        await pilot.pause()
        padding = list(widget.render_line(0))[-1]
        assert padding.style is not None and padding.style.bgcolor is not None
        assert padding.style.bgcolor.get_truecolor() == (200, 0, 0)


DEPENDENT = {
    "loose list": "Steps:\n\n- first\n\n- second, after a blank line\n\n- third\n\nDone.",
    "continuation": "1. one\n\n   more about one\n\n2. two\n\n```\ncode\n\nstill code\n```\n",
    "reference link": "See [the docs][d] first.\n\nThen this.\n\n[d]: https://example.com\n",
    "tail in a list": "Intro.\n\n- a\n- b\n\n- c, the tail",
}


@pytest.mark.parametrize("name", list(DEPENDENT))
async def test_finish_equals_the_whole_render_where_blocks_depend_on_each_other(
        name: str) -> None:
    """A loose list, a list item's continuation, a reference link: runs that are not
    independent blocks are rendered again together at the end, so the final lines are those
    of the one-shot render of the whole answer, however the text was streamed."""
    text = DEPENDENT[name]
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        reference = await reference_lines(app, pilot, text)
        widget = await streamed_widget(app, pilot, text)
        widget.finish()
        assert await final_lines(widget) == reference


@pytest.mark.parametrize(("ending", "rendered_at_finish"), [
    ("the tail", []),  # every block stands alone: the lines on screen are the final ones
    ("- a\n\n- b, the tail", ["- a\n\n- b, the tail"]),  # a loose list: rendered as one
])
async def test_finish_renders_only_what_may_differ(
        monkeypatch: pytest.MonkeyPatch, ending: str, rendered_at_finish: list[str]) -> None:
    """The end of a stream renders only the blocks that may not stand alone, never the whole
    answer again (four panes' long answers end at once)."""
    text = "\n\n".join(f"Paragraph {i} with some **bold** text." for i in range(400))
    text += "\n\n" + ending
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        reference = await reference_lines(app, pilot, text)
        widget = await streamed_widget(app, pilot)
        widget.append(text)
        widget.flush()
        rendered: list[str] = []
        original = markdown_stream.render_markdown

        def counting(source: str, *args: Any) -> Any:
            rendered.append(source)
            return original(source, *args)

        monkeypatch.setattr(markdown_stream, "render_markdown", counting)
        widget.finish()
        assert await final_lines(widget) == reference
        assert rendered == rendered_at_finish


def test_blocks_that_may_continue_the_one_before_are_not_taken_as_standing_alone() -> None:
    alone = ["# Title", "A paragraph.", "- a list\n- of two", "| a | b |\n|---|---|", "> quote",
             "```\ncode\n```", "1. after a quote"]
    assert blocks_stand_alone(alone)
    for before, block in [("- a", "- b"), ("Intro:\n- a", "- b"), ("1. one", "2. two"),
                          ("- a", "  more of a"), ("text", "    indented code"),
                          ("<div>", "inside"), ("see [x][r]", "[r]: https://example.com")]:
        assert not blocks_stand_alone([before, block]), (before, block)


SNIPPETS = ["Para **bold** text.", "# Head", "- a\n- b", "- a", "1. one", "2. two", "1) paren",
            "+ plus", "- a\n  - b", "  - nested", "  continued item", "    indented code",
            "<div>", "</div>", "<!--", "-->", "> quote", "Para *x*\n> q", "---",
            "```py\nx = 1\n\ny = 2\n```", "| a | b |\n|---|---|\n| 1 | 2 |", "~~~\nfence\n~~~",
            "see [x][r] here", "[r]: https://example.com", "Text\n- inner list"]


def test_the_final_lines_equal_the_whole_render_for_any_mix_of_blocks() -> None:
    """Property (fixed seed, 400 answers of up to 7 blocks, tricky ones included): the lines
    kept or re-rendered at the end equal rich's render of the whole answer."""
    width = 60
    console = Console(width=width)
    options = console.options.update_width(width)
    rng = random.Random(3)

    def text_of(lines: list[Any]) -> list[str]:
        return ["".join(segment.text for segment in line).rstrip() for line in lines]

    for _ in range(400):
        text = "\n\n".join(rng.choice(SNIPPETS) for _ in range(rng.randint(1, 7)))
        blocks, rest = split_blocks(text)
        parts = [render_markdown(b, width, True, options, console) for b in blocks]
        if blocks_stand_alone([*blocks, rest]):
            lines = join_parts([*parts, render_markdown(rest, width, True, options, console)],
                               width)
        else:
            lines = render_final(text, list(zip(blocks, parts, strict=True)), width, True,
                                 options, console)
        whole = render_markdown(text, width, True, options, console).lines
        assert text_of(lines) == text_of(whole), text


def test_packed_lines_read_back_as_packed_and_cost_the_collector_nothing() -> None:
    width = 60
    console = Console(width=width)
    text = "\n\n".join(SNIPPETS * 20)
    lines = render_markdown(text, width, True, console.options.update_width(width),
                            console).lines
    packed = PackedLines()
    packed.extend(lines)
    assert len(packed) == len(lines)
    assert [packed[y] for y in range(len(packed))] == [
        [Segment(s.text, s.style) for s in line] for line in lines]
    gc.collect()
    tracked_before = len(gc.get_objects())
    more = PackedLines()
    more.extend(lines)
    gc.collect()  # untracks the tuples of texts and of style indexes ...
    gc.collect()  # ... then the tuples that hold them
    # a few objects for the container and its styles, not one or more per line
    assert len(gc.get_objects()) - tracked_before < len(lines) // 10


TAGGED = '<message id="1">hi</message>\n\nline one<br>line two\n\n<div>\n\nkept\n</div>'
TAGGED_LINES = ['<message id="1">hi</message>', "", "line one<br>line two", "", "<div>", "",
                "kept </div>"]  # a soft line break is a space, as Markdown says


async def test_html_like_tags_show_as_text_streamed_and_finished() -> None:
    """An answer that starts with ``<`` (the local model's ``<message id=…>``) or holds tags
    shows them as written: rich would drop HTML and leave an empty answer."""
    app = Host()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        widget = await streamed_widget(app, pilot, TAGGED)
        assert widget.text_lines() == TAGGED_LINES
        widget.finish()
        assert await final_lines(widget) == TAGGED_LINES
        assert await reference_lines(app, pilot, TAGGED) == TAGGED_LINES


def test_the_terminal_renderer_shows_tags_as_text_too() -> None:
    from io import StringIO

    from tui_agent.cli.render import MarkdownBlock, make_console

    out = StringIO()
    make_console(out).print(MarkdownBlock(TAGGED))
    shown = [line.rstrip() for line in out.getvalue().split("\n")]
    assert shown[: len(TAGGED_LINES)] == TAGGED_LINES


@pytest.mark.parametrize("theme", ["monokai", "default"])
@pytest.mark.parametrize("fence", ["python", "no-such-language", "", "rust {.numbered}"])
def test_cached_code_blocks_render_as_rich_does(theme: str, fence: str) -> None:
    """The shared lexer and theme (markdown_render.py) change the cost, not the lines."""
    source = (f"```{fence}\ndef check(client, timeout=5.0):\n\treturn client.get('/x')"
              "  # a long comment that wraps at this width, and a tab above\n```\n")
    console = Console(width=40, color_system="truecolor")
    options = console.options.update_width(40)
    ours = console.render_lines(FastMarkdown(source, code_theme=theme), options)
    rich = console.render_lines(Markdown(source, code_theme=theme), options)
    assert ours == rich
    assert len(ours) > 3  # wrapped and padded: a real render was compared
