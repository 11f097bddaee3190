"""``tui-agent``'s command line, the app's and the commands' alike: chat on a thread, send into
one, watch one — from any number of terminals.

Only argparse is imported here, so ``tui-agent --help`` is instant; rich, the agent core and
litellm load when a command runs (``settle`` reads the settings).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from tui_agent.startup.approval_args import approval_parsers

COMMANDS = ("chat", "send", "watch", "notify", "state", "search", "export", "import", "serve",
            "config", "approvals", "approve", "deny")

_DESCRIPTION = """\
Agents on shared, live threads. Every command works on one thread of a store (a SQLite file,
or a PostgreSQL database shared past one machine):
several terminals on the same --db and --resource/--thread see the same conversation live.

  tui-agent                            the app: live thread panes (ctrl+o opens threads)
  tui-agent --demo                     the app on a live demo thread (no key, no network)
  tui-agent chat                       a line-based chat with the demo agent
  tui-agent send --thread main "hi"    send one message (wakes a run or joins the live one)
  tui-agent watch --thread main        print the thread's live stream until Ctrl-C
  tui-agent notify -t main --source ci --kind build --priority high "build failed"
  tui-agent state -t main --lane browser '{"tabs": 3}'
  tui-agent search "deploy blocked"    messages of every thread holding these words
  tui-agent export -t main             a thread whole, as Markdown or JSON (to import elsewhere)
  tui-agent serve                      the app in a browser, on http://127.0.0.1:8000
  tui-agent config                     the effective settings and where each came from
  tui-agent approvals                  tool calls waiting for a person (approve ID, deny ID)

With no command, the app runs.
"""

_COMMON_EPILOG = """\
settings: flags > $TUI_AGENT_* > ./tui-agent.toml or ~/.config/tui-agent/tui-agent.toml
store:   --db PATH (or sqlite:///PATH, or postgresql://user@host:port/db with
         pip install 'tui-agent[postgres]'), else $TUI_AGENT_DB, else the settings file's db,
         else $XDG_DATA_HOME/tui-agent/tui-agent.db
thread:  --resource defaults to $USER (or "local"), --thread to "main"
model:   --model defaults to $TUI_AGENT_MODEL, else local/smollm2 (no key needed)
agents:  --agent path/to/agents.py:name (or package.module:name) loads your own Agent, a list
         or dict of them (pick with --agent-name); it gets the CLI's store if it has no memory
threads: a -t thread must exist (exit 2 naming the closest ones) unless --new (send, notify,
         state) or --wait (watch); chat -t NEW creates it; the default thread is made on first use
exit:    0 done, 1 failed (a run ended in an error; search: nothing matched), 2 bad usage, a
         bad setting, or a thread or store that does not exist or cannot be used
"""


# Options are accepted before and after the command (``tui-agent --db x send ...`` and
# ``tui-agent send --db x ...``): both parsers leave unset options out of the namespace
# (SUPPRESS), and the defaults are filled in afterwards, so neither overwrites the other.
_DEFAULTS: dict[str, Any] = {
    "db": None, "resource": None, "thread": None, "agent": None, "agent_name": None,
    "model": None, "tools": None, "as_name": None, "attr": None, "demo": False,
    "no_warm": False,
}


def _common(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("store, thread and agent")
    group.argument_default = argparse.SUPPRESS
    group.add_argument("--db", metavar="PATH",
                       help="the store: a file, or a postgresql:// URL (shared by all terminals)")
    group.add_argument("--resource", "-r", metavar="R", help="resource id (default: $USER)")
    group.add_argument("--thread", "-t", metavar="T", help="thread id (default: main)")
    group.add_argument("--agent", metavar="FILE.py:NAME",
                       help="load your own agent(s): path/to/file.py:name or module:name")
    group.add_argument("--agent-name", metavar="ID", help="which agent, if --agent has several")
    group.add_argument("--model", "-m", metavar="PROVIDER/MODEL",
                       help="model router string, e.g. openai/gpt-4o-mini "
                            "(default: $TUI_AGENT_MODEL or local/smollm2)")
    tools = group.add_mutually_exclusive_group()
    tools.add_argument("--tools", dest="tools", action="store_true", default=argparse.SUPPRESS,
                       help="give the demo agent its tools (calculator, current_time); on by "
                            "default except for local/… models, whose 135M answers get worse "
                            "with tools")
    tools.add_argument("--no-tools", dest="tools", action="store_false",
                       default=argparse.SUPPRESS, help="demo agent without tools")


def _sender(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--as", dest="as_name", metavar="NAME", default=argparse.SUPPRESS,
                        help="your name, shown as a badge and given to the model as name=…")
    parser.add_argument("--attr", action="append", metavar="K=V", default=argparse.SUPPRESS,
                        help="an attribute of your messages, e.g. --attr from=slack (repeatable)")


def build_parser(
    only: str | None = None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> argparse.ArgumentParser:
    """The command line; ``only="notify"``: that command alone (its lean path parses with it,
    in a millisecond, with a ``parser_class`` whose errors hand over to the full parser)."""
    parser = parser_class(
        prog="tui-agent", description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_COMMON_EPILOG,
    )
    from tui_agent import __version__

    parser.add_argument("--version", action="version", version=f"tui-agent {__version__}")
    _common(parser)
    _sender(parser)
    parser.add_argument("--demo", action="store_true", default=argparse.SUPPRESS,
                        help="open the app on the live demo thread demo/demo: three people, a "
                             "browser state lane and notifications, on the local model")
    parser.add_argument("--no-warm", action="store_true", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)  # tests: don't load the model in the background
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}",
                                help="with none, the app opens")
    fmt = argparse.RawDescriptionHelpFormatter
    if only == "notify":
        _notify_parser(sub, fmt)
        return parser

    chat = sub.add_parser("chat", help="a line-based chat on a thread",
                          formatter_class=fmt, epilog=_CHAT_EPILOG + "\n" + _COMMON_EPILOG)
    _common(chat)
    _sender(chat)

    send = sub.add_parser("send", help="send one message into a thread",
                          formatter_class=fmt, epilog=_SEND_EPILOG + "\n" + _COMMON_EPILOG)
    _common(send)
    _sender(send)
    send.add_argument("--queue", action="store_true",
                      help="run after the thread's live run ends, instead of joining it")
    send.add_argument("--signal-type", choices=("user", "state", "reactive", "notification"),
                      help="send a typed signal instead of a user message")
    send.add_argument("--tag", metavar="TAG", help="the signal's tag name (with --signal-type)")
    send.add_argument("--quiet", "-q", action="store_true",
                      help="if this process runs the answer, wait for it without printing it")
    send.add_argument("--no-wait", action="store_true",
                      help="return once the message is stored and routed: a run it wakes is "
                           "answered by the process that hosts the thread (the app or chat), "
                           "else by the next process that opens it")
    _new(send)
    send.add_argument("text", nargs="+", help="the message")

    watch = sub.add_parser("watch", help="print a thread's live stream until Ctrl-C",
                           formatter_class=fmt, epilog=_COMMON_EPILOG)
    _common(watch)
    watch.add_argument("--json", action="store_true",
                       help="one JSON object per chunk (type, run_id, from, payload) per line")
    watch.add_argument("--wait", action="store_true",
                       help="a -t thread that does not exist yet: wait for it (else exit 2)")
    _notify_parser(sub, fmt)
    _state_parser(sub, fmt)
    _search_parser(sub, fmt)
    _transfer_parsers(sub, fmt)
    approval_parsers(sub, fmt, _common, _COMMON_EPILOG)
    serve = sub.add_parser("serve", help="the app in a browser (textual-serve)",
                           formatter_class=fmt, epilog=_SERVE_EPILOG + "\n" + _COMMON_EPILOG)
    _common(serve)
    _sender(serve)
    serve.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default: 8000)")
    serve.add_argument("--token", metavar="TOKEN",
                       help="the token the page must present (default: $TUI_AGENT_SERVE_TOKEN; "
                            "off 127.0.0.1, one is made up and printed in the URL)")
    config = sub.add_parser("config", help="print the effective settings and their sources",
                            formatter_class=fmt, epilog=_COMMON_EPILOG)
    _common(config)
    return parser


def _notify_parser(sub: Any, fmt: Any) -> None:
    notify = sub.add_parser("notify", help="send a notification into a thread's inbox",
                            formatter_class=fmt, epilog=_COMMON_EPILOG)
    _common(notify)
    notify.add_argument("--source", help="where it comes from, e.g. ci (required, except in "
                        "JSON lines of --stdin that say it)")
    notify.add_argument("--kind", help="what it is, e.g. build (required, as --source)")
    notify.add_argument("--priority", choices=("low", "medium", "high", "urgent"),
                        default="medium")
    notify.add_argument("--dedupe-key", metavar="K", help="merge with a pending record of this key")
    notify.add_argument("--coalesce-key", metavar="K", help="coalesce with pending records (×N)")
    notify.add_argument("--wait", action="store_true",
                        help="wait for the run the notification wakes, and run it here if no "
                             "other process hosts the thread (else notify returns at once)")
    notify.add_argument("--stdin", action="store_true",
                        help="one notification per line of stdin: JSON ({\"source\", \"kind\", "
                             "\"summary\", …}) or plain text (the summary; --source/--kind apply)")
    _new(notify)
    notify.add_argument("summary", nargs="*", help="one line saying what happened")


def _state_parser(sub: Any, fmt: Any) -> None:
    state = sub.add_parser("state", help="send a state-lane update into a thread",
                           formatter_class=fmt, epilog=_COMMON_EPILOG)
    _common(state)
    state.add_argument("--lane", required=True, help="the lane's id, e.g. browser")
    state.add_argument("--delta", action="store_true",
                       help="the JSON is a merge patch on the lane's value (else a snapshot)")
    state.add_argument("--cache-key", metavar="K",
                       help="unchanged when equal to the lane's (default: a hash of the JSON)")
    _new(state)
    state.add_argument("json", help="the value (or patch) as JSON, e.g. '{\"tabs\": 3}'")


def _new(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--new", action="store_true",
                        help="create the -t thread if it does not exist (else a thread that "
                             "does not exist is an error, exit 2: a typo creates nothing)")


def _search_parser(sub: Any, fmt: Any) -> None:
    search = sub.add_parser("search", help="find messages by their words, in every thread",
                            formatter_class=fmt, epilog=_SEARCH_EPILOG + "\n" + _COMMON_EPILOG)
    _common(search)
    search.add_argument("--json", action="store_true",
                        help="one JSON object per message per line (thread, role, text, …)")
    search.add_argument("--limit", type=int, default=50, metavar="N",
                        help="at most N messages, newest first (default: 50)")
    search.add_argument("query", nargs="+", help='words (each matches the words it begins) or '
                        '"a phrase"; every one must match')


def _transfer_parsers(sub: Any, fmt: Any) -> None:
    export = sub.add_parser("export", help="write a thread whole, as JSON (to import) or Markdown",
                            formatter_class=fmt, epilog=_COMMON_EPILOG)
    _common(export)
    export.add_argument("--format", choices=("md", "json"), default="md",
                        help="md: to read; json: to import elsewhere (default: md)")
    export.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: stdout)")
    imp = sub.add_parser("import", help="bring an exported thread (its JSON) into this store",
                         formatter_class=fmt, epilog=_COMMON_EPILOG)
    _common(imp)
    imp.add_argument("--replace", action="store_true",
                     help="replace the thread if this store has it already (else refused)")
    imp.add_argument("file", metavar="FILE.json", help="the file `export --format json` wrote "
                     "(- for stdin)")


_SERVE_EPILOG = """\
Prints the URL to open. Each page runs its own app on the same store and thread. On any
address but 127.0.0.1 the page must present a token (the printed URL carries it): share the
URL only with the people who may use your agent and store.
"""

_SEARCH_EPILOG = """\
Searches the user and assistant messages of every thread of the store, or of -t THREAD only,
newest first. Exit status: 0 found, 1 nothing matched, 2 a bad query or an unknown thread.
"""

_CHAT_EPILOG = """\
In the chat: type a line and Enter to send it. Ctrl-C during an answer aborts it (the partial
answer stays, marked aborted); Ctrl-C or Ctrl-D at the prompt quits.
Commands: /help  /quit  /queue TEXT  /abort  /history [N]
"""

_SEND_EPILOG = """\
Prints the routing decision: `deliver → run X` (joined the live run, also one in another
process), `wake → run X` (started a run: this process runs it and prints the answer), persist or
discard.
"""


def parse_args(
    argv: Sequence[str] | None = None, parser: argparse.ArgumentParser | None = None
) -> argparse.Namespace:
    args = (parser or build_parser()).parse_args(argv)
    args.thread_given = getattr(args, "thread", None) is not None  # search: -t narrows it
    for name, value in _DEFAULTS.items():
        if not hasattr(args, name):
            setattr(args, name, value)
    args.command = args.command or "app"
    if args.demo and args.command != "app":
        build_parser().error("--demo opens the app: use it without a command")
    return args


def settle(args: argparse.Namespace) -> None:
    """Read the settings once (flags > env > file) and fill the options from them."""
    from tui_agent.settings import load_settings
    from tui_agent.startup.agents import default_resource

    flags = {"db": args.db, "resource": args.resource, "thread": args.thread,
             "model": args.model, "default_agent": args.agent_name}
    args.settings = load_settings(flags)
    args.db = args.settings.db
    args.resource = args.settings.resource or default_resource()
    args.thread = args.settings.thread
