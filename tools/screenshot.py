"""Regenerate the README's screenshot: ``python tools/screenshot.py [OUT.svg]``.

A scripted scene (no model, no network) on a temporary store: the demo thread with three people,
a state change, notifications and an answer with code, beside a second thread mid-answer. The
SVG is Textual's own screenshot of the real app, so it shows what a user sees.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parents[1] / ".readme" / "app.svg"
ANSWER = (
    "Yes — once **#42** merges, the release job tags `v2.4.0`:\n\n"
    "1. merge #42\n2. wait for CI on `main`\n3. run the release job\n\n"
    "```bash\ngit tag v2.4.0 && git push --tags\n```\n"
)


async def _scene(agent: Any, gate: asyncio.Event) -> None:
    demo = {"resource_id": "demo", "thread_id": "demo"}
    await agent.memory.create_thread("demo", resource_id="demo", title="Demo: release day")
    await agent.memory.create_thread("standup", resource_id="team", title="Daily stand-up")
    for name, source, text in [("Ana", "slack", "Can we ship the fix today?"),
                               ("Devin", "github", "PR #42 is green")]:
        await _persist(agent, {"contents": text, "attributes": {"name": name, "from": source}},
                       **demo)
    await agent.send_state_signal(
        {"id": "browser", "mode": "snapshot", "cache_key": "42",
         "value": {"tabs": 3, "url": "https://github.com/acme/app/pull/42"}},
        if_idle={"behavior": "persist"}, **demo)
    await agent.send_notification_signal(
        {"source": "ci", "kind": "build", "summary": "build failed on main (flaky test)",
         "priority": "low"}, **demo)
    receipt = agent.send_message(
        {"contents": "What is left before we tag?", "attributes": {"name": "Mei",
                                                                   "from": "terminal"}}, **demo)
    await (await receipt.accepted)["output"].consume_stream()
    receipt = agent.send_message(
        {"contents": "Any blockers?", "attributes": {"name": "Ana", "from": "slack"}},
        resource_id="team", thread_id="standup")
    await receipt.accepted


async def _persist(agent: Any, message: dict[str, Any], **target: str) -> None:
    receipt = agent.send_message(message, if_idle={"behavior": "persist"}, **target)
    await receipt.accepted


async def make_screenshot(out: Path) -> Path:
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.app.app import AppConfig, TuiAgentApp
    from tui_agent.app.widgets.composer import Identity
    from tui_agent.testing import ScriptedModel

    gate = asyncio.Event()

    async def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        if "Any blockers" in str(messages[-1].get("content")):
            await gate.wait()  # the second pane stays mid-answer for the picture
        return ANSWER

    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "screenshot.db")
        agent = Agent(name="demo", instructions="-", model=ScriptedModel(handler=answer),
                      memory=Memory(store=store))
        await _scene(agent, gate)
        config = AppConfig(agent=agent, threads=[("team", "standup"), ("demo", "demo")],
                           identity=Identity("you", {"from": "terminal"}), agent_label="demo",
                           model_label="local/smollm2", default_resource="demo",
                           warm_model=False)
        app = TuiAgentApp(config)
        async with app.run_test(size=(160, 40)) as pilot:
            while not all(p.feed.attached and p.drained for p in app.panes):
                await pilot.pause(0.05)
            for pane in app.panes:
                pane.header_state.started_at = None  # no elapsed time: the SVG stays stable
                pane.query_one("PaneHeader").show()  # type: ignore[attr-defined]
            await pilot.pause(0.2)
            out.parent.mkdir(parents=True, exist_ok=True)
            app.save_screenshot(filename=out.name, path=str(out.parent))
            gate.set()
        await agent.close()
        await store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else DEFAULT_OUT
    print(asyncio.run(make_screenshot(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
