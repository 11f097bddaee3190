"""rich's ``Markdown`` with its code blocks' lexer and theme looked up once, not per block.

rich's ``CodeBlock`` hands ``Syntax`` a lexer *name* and a theme *name*: every code block then
pays pygments' lookups (``get_lexer_by_name`` alone ~0.5 ms, a few times per block), which was
most of a code block's render cost with four panes streaming. Here the lexer and theme objects
are made once per name and shared; the lines rendered are the same
(tests/app/test_markdown_stream.py::test_cached_code_blocks_render_as_rich_does).
"""

from __future__ import annotations

from functools import cache
from typing import ClassVar

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Markdown, MarkdownElement
from rich.syntax import Syntax, SyntaxTheme

TAB_SIZE = 4  # rich's ``Syntax`` default, which its lexers are made with


@cache
def lexer_for(name: str) -> Lexer:
    """The lexer ``Syntax(code, name)`` would make (its plain-text one for an unknown name).
    Lexers keep no state between calls of ``get_tokens``: one is shared across threads."""
    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=True, tabsize=TAB_SIZE)
    except ClassNotFound:
        return get_lexer_by_name("text", stripnl=False, ensurenl=True, tabsize=TAB_SIZE)


@cache
def theme_for(name: str) -> SyntaxTheme:
    return Syntax.get_theme(name)


class CachedCodeBlock(CodeBlock):
    """rich's code block, rendered with the shared lexer and theme."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        yield Syntax(code, lexer_for(self.lexer_name), theme=theme_for(self.theme),
                     word_wrap=True, padding=1)


class FastMarkdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements, "fence": CachedCodeBlock, "code_block": CachedCodeBlock,
    }
