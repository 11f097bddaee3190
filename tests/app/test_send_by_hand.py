"""The palette's forms send a notification or a state update into the focused pane's thread,
so a user can try the delivery policy from the app; a bad field is named, nothing is sent."""

from __future__ import annotations

from helpers.app import AppFactory, pane_of, until
from textual.widgets import Button, Input

from tui_agent.app.screens.send_signal import SendSignalScreen


def status(app: object) -> str:
    return str(pane_of(app).query_one("#pane-status").render())  # type: ignore[arg-type]


async def test_a_notification_sent_by_hand_lands_in_the_inbox_with_its_decision(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        app.send_by_hand("notification")
        await until(pilot, lambda: isinstance(app.screen, SendSignalScreen), "the form")
        app.screen.query_one("#summary", Input).value = "deploy failed"
        app.screen.query_one("#send", Button).press()
        await until(pilot, lambda: status(app).startswith("✉ "), "the decision")
        records = await app.config.agent.memory.list_notifications(thread_id="main")
        assert [(r.source, r.kind, r.priority, r.summary) for r in records] == [
            ("ci", "build", "high", "deploy failed")]
        assert "deliver" in status(app)


async def test_a_state_update_by_hand_and_a_bad_value_named(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        app.send_by_hand("state")
        await until(pilot, lambda: isinstance(app.screen, SendSignalScreen), "the form")
        app.screen.query_one("#value", Input).value = "{not json"
        app.screen.query_one("#send", Button).press()
        await until(pilot, lambda: "value: not JSON" in str(
            app.screen.query_one("#form-error").render()), "the error")
        app.screen.query_one("#value", Input).value = '{"tabs": 4}'
        app.screen.query_one("#send", Button).press()
        await until(pilot, lambda: not isinstance(app.screen, SendSignalScreen), "sent")
        memory = app.config.agent.memory
        lanes: list[object] = []
        while not lanes:  # the send runs in a worker: its write lands soon after the form
            lanes = await memory.list_state_lanes("main")
            await pilot.pause()
        lane = await memory.get_state_lane("main", "browser")
        assert lane is not None and lane.value == {"tabs": 4} and lane.version == 1
