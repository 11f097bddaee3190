"""``tui-agent search QUERY``: the messages of every thread (or of ``-t THREAD``) holding every
word of the query, newest first (``Memory.search_messages``): one line of where each is, and a
snippet with the matches highlighted; ``--json``: one JSON object per message per line. Exits 1
when nothing matched (as grep does), 2 for a query with no words or a thread that does not
exist. Tested by tests/test_cli_search.py."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.text import Text

from tui_agent.cli.render import make_console
from tui_agent.errors import ConfigError
from tui_agent.startup.agents import open_memory
from tui_agent.text import match_spans, search_terms, snippet

EXIT_NONE_FOUND = 1


async def run_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    terms = search_terms(query)
    if not terms:
        raise ConfigError(f"search: {query!r} has no words to search for")
    if args.limit < 1:
        raise ConfigError(f"search: --limit must be at least 1, not {args.limit}")
    memory = open_memory(args)
    try:
        thread_id = args.thread if args.thread_given else None
        if thread_id is not None and await memory.get_thread(thread_id) is None:
            from tui_agent.cli.threads import missing_thread_message

            raise ConfigError("search: " + await missing_thread_message(
                memory, thread_id, "leave out -t to search every thread"))
        hits = await memory.search_messages(query, thread_id=thread_id, limit=args.limit)
    finally:
        await memory.store.close()
    if args.json:
        for hit in hits:
            sys.stdout.write(json.dumps(_plain(hit), ensure_ascii=False) + "\n")
    else:
        _print(hits, terms)
    return 0 if hits else EXIT_NONE_FOUND


def _plain(hit: Any) -> dict[str, Any]:
    return hit.model_dump(mode="json")


def _print(hits: list[Any], terms: list[tuple[str, ...]]) -> None:
    console = make_console()
    for hit in hits:
        when = hit.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
        title = f" · {hit.thread_title}" if hit.thread_title else ""
        console.print(Text.assemble(
            (f"{hit.resource_id}/{hit.thread_id}", "bold"), (f"{title} · {when} · ", "dim"),
            (hit.role, "cyan")))
        console.print(highlighted(snippet(hit.text, terms), terms), soft_wrap=True)
    make_console(sys.stderr).print(
        f"[dim]{len(hits)} {'message' if len(hits) == 1 else 'messages'}[/dim]")


def highlighted(text: str, terms: list[tuple[str, ...]]) -> Text:
    shown = Text("  " + text)
    for start, end in match_spans(text, terms):
        shown.stylize("bold reverse", start + 2, end + 2)
    return shown
