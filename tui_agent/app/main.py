"""``tui-agent`` with no command: the app paints its frame first, then (``boot``) reads the
settings, builds the agent and checks its model off the event loop.

The model's setup errors that are cheap to find (a missing key, the local runtime not
installed) and a bad settings file end the app at once and are printed as one clear line with
exit code 2; loading the model (litellm's import, the local model's server) happens in the
background while the app is usable.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from tui_agent.app.crash import EXIT_CRASHED, crash_line, write_crash_report

DEMO_CSS = Path(__file__).parent / "demo.tcss"  # demo.tcss at the repository's top, shipped
CLOSE_S = 5.0  # how long the app's last runs may take to end once it exits


def build_config(args: argparse.Namespace, agent: Any) -> Any:
    from tui_agent.app.app import AppConfig
    from tui_agent.app.bridge import demo_thread
    from tui_agent.app.widgets.composer import Identity
    from tui_agent.settings_file import remember_setting
    from tui_agent.startup.agents import default_resource, model_label, parse_attrs, store_path

    attributes = parse_attrs(args.attr, None)
    name = args.as_name or default_resource()  # you, not the thread's resource
    threads = [(args.resource, args.thread)]
    if args.demo:
        if not args.as_name:
            name = "you"
            attributes.setdefault("from", "terminal")
        threads = [demo_thread()]
    return AppConfig(
        agent=agent, threads=threads, identity=Identity(name, attributes),
        agent_label=str(agent.id), model_label=model_label(agent),
        default_resource=args.resource, store_label=store_path(agent),
        warm_model=not args.no_warm, demo=args.demo,
        keymap=dict(args.settings.keymap), theme=args.settings.theme,
        show_inbox=args.settings.show_inbox, show_state=args.settings.show_state,
        remember=remember_setting, models=settings_models(args.settings),
    )


def settings_models(settings: Any) -> list[str]:
    """The model strings of the settings file (its ``model``, each agent's): the picker's."""
    return [settings.model, *(agent.model for agent in settings.agents)]


async def run_app(args: argparse.Namespace) -> int:
    """Run the app; 0 when you quit, 1 (and a crash file) when a bug ended it."""
    from tui_agent.app.app import TuiAgentApp
    from tui_agent.app.gc_policy import settle_garbage_collector

    built: list[Any] = []

    async def boot() -> Any:
        from tui_agent.startup.agents import build_agent, missing_credential
        from tui_agent.startup.args import settle
        from tui_agent.startup.mcp_tools import start_mcp_tools

        await asyncio.to_thread(settle, args)  # the settings: flags > env > file
        agent = await asyncio.to_thread(build_agent, args)  # the core's imports, off the loop
        built.append(agent)
        # A missing runtime: one line, exit 2. A missing key is no reason not to start: the
        # pane names the variable and offers the local model (tests/app/test_thread_model.py).
        missing_key = await missing_credential(agent)
        config = build_config(args, agent)
        config.warm_model = config.warm_model and missing_key is None
        config.notices = await start_mcp_tools(agent)  # a server that did not start: a notice
        settle_garbage_collector()  # the core's modules are in now
        return config

    extra_css = [str(DEMO_CSS)] if args.demo else []
    started: list[TuiAgentApp] = []
    try:
        if sys.stderr.isatty():  # paint first, boot behind the first screen
            app = TuiAgentApp(boot=boot, extra_css=extra_css)
        else:  # no terminal to paint on: a start-up error must be the only output
            app = TuiAgentApp(await boot(), extra_css=extra_css)
        started.append(app)
        settle_garbage_collector()
        result = await app.run_async()
    finally:
        for each in started:  # after a crash too: the runs this app owned end aborted
            await each.shutdown()
        from tui_agent.startup.mcp_tools import close_mcp_tools

        for agent in built:
            await agent.close(timeout=CLOSE_S)
            await close_mcp_tools(agent)
            await agent.memory.store.close()
    if app.crash is not None:
        print(crash_line(app.crash, write_crash_report(app.crash)), file=sys.stderr)
        return EXIT_CRASHED
    if app.startup_error is not None:
        raise app.startup_error
    return int(result or 0)
