"""An MCP server that does not start is a notice on the app's screen, and the app runs on
(the notices come from tui_agent.startup.mcp_tools.start_mcp_tools, as the app's boot does)."""

from __future__ import annotations

from helpers.app import AppFactory, pane_of, until

from tui_agent.settings_mcp import MCPServerSettings
from tui_agent.startup.mcp_tools import MCPToolbox, close_mcp_tools, start_mcp_tools


async def test_a_server_that_does_not_start_is_a_notice_and_the_app_runs(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    agent.tools = MCPToolbox(agent.tools, {"ghost": MCPServerSettings(command="/no/such/server")})
    try:
        app.config.notices = await start_mcp_tools(agent)
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            pane = pane_of(app)
            await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
            await until(
                pilot,
                lambda: any(
                    "MCP server 'ghost' did not start" in toast.render().plain
                    for toast in app.screen.query("Toast")
                ),
                "the notice",
            )
    finally:
        await close_mcp_tools(agent)
    assert app.config.notices == [
        "MCP server 'ghost' did not start: FileNotFoundError: No such file or directory: "
        "/no/such/server; its tools are left out"
    ]
