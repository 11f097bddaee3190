"""``tui-agent`` with no command: build the agent, check its model, run the app.

The model's setup errors that are cheap to find (a missing key, the local runtime not
installed) are raised before the screen opens, as one clear line; loading it (litellm's import,
the local model's server) happens in the background once the first screen has painted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tui_agent.cli.common import (
    build_agent,
    check_model,
    default_resource,
    model_label,
    parse_attrs,
    store_path,
)

DEMO_CSS = Path(__file__).parent / "demo.tcss"  # demo.tcss at the repository's top, shipped


def build_config(args: argparse.Namespace, agent: Any) -> Any:
    from tui_agent.app.app import AppConfig
    from tui_agent.app.widgets.composer import Identity
    from tui_agent.demo import DEMO_RESOURCE, DEMO_THREAD

    attributes = parse_attrs(args.attr, None)
    name = args.as_name or default_resource()  # you, not the thread's resource
    threads = [(args.resource, args.thread)]
    if args.demo:
        if not args.as_name:
            name = "you"
            attributes.setdefault("from", "terminal")
        threads = [(DEMO_RESOURCE, DEMO_THREAD)]
    return AppConfig(
        agent=agent, threads=threads, identity=Identity(name, attributes),
        agent_label=str(agent.id), model_label=model_label(agent),
        default_resource=args.resource, store_label=store_path(agent),
        warm_model=not args.no_warm, demo=args.demo,
        extra_css=[str(DEMO_CSS)] if args.demo else [],
        keymap=dict(args.settings.keymap), theme=args.settings.theme,
    )


async def run_app(args: argparse.Namespace) -> int:
    agent = build_agent(args)
    try:
        await check_model(agent, warm=False)  # a missing key or runtime: one line, exit 2
        from tui_agent.app.app import TuiAgentApp

        app = TuiAgentApp(build_config(args, agent))
        result = await app.run_async()
        return int(result or 0)
    finally:
        await agent.close()
        await agent.memory.store.close()
