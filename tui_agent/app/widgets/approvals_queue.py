"""The approvals queue: every tool call of the store that waits for a person, live, above the
notification inbox, with the answers ``tui-agent approve``/``deny`` give.

Layout: a title (how many wait), the calls oldest first (id, thread, tool, input, age), the
cursor's input in full, a line to type in (an edited input, or a reason) and the actions.
Guarantees:

- Shown only while a call waits (it takes no room otherwise); ``f10`` (the app's) focuses it.
- ``y`` (or enter) approves the cursor's call, ``e`` approves it with an edited input (the
  input's JSON comes into the line to edit; enter sends it, checked against the tool's schema
  first), ``n`` denies it with the reason typed in the line (enter sends it); ``escape`` leaves
  the line. A refused answer (answered in another terminal meanwhile, a bad input) is a toast,
  and changes nothing.
- Live across terminals: it follows ``ApprovalFeed``; a call that starts waiting anywhere
  shows a toast naming it. Ages come from ``clock``, injectable so snapshots can freeze it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static

from tui_agent.app.approval_feed import ApprovalFeed
from tui_agent.app.focus import focus_now
from tui_agent.text import one_line, waited

TICK_S = 1.0  # ages are redrawn this often
INPUT_CHARS = 36  # of a call's input in its row (the detail line has it whole)


def input_text(args: Any) -> str:
    return json.dumps(args, ensure_ascii=False)


class ApprovalsQueue(Vertical):
    DEFAULT_CSS = """
    ApprovalsQueue {
        height: auto;
        max-height: 16;
        background: $surface;
        border-bottom: hkey $border-blurred;
        & > #approvals-title {
            height: 1; background: $warning-muted; padding: 0 1; text-wrap: nowrap;
        }
        & > #approvals-list { height: auto; max-height: 8; border: none; padding: 0; }
        & > #approvals-detail {
            height: auto; max-height: 4; padding: 0 1; color: $text-muted;
        }
        & > #approvals-line { height: 1; border: none; padding: 0 1; background: $panel; }
        & > #approvals-actions { height: 1; color: $text-muted; padding: 0 1; text-wrap: nowrap; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "approve", "Approve", id="approvals.approve"),
        Binding("e", "edit", "Edit & approve", id="approvals.edit"),
        Binding("n", "deny", "Deny", id="approvals.deny"),
        Binding("escape", "leave_line", "Back", show=False, id="approvals.back"),
        # The queue sits in the inbox's column: the inbox's own keys do nothing here.
        Binding("s,d,a,space,slash,p,t,c,o,m", "nothing", show=False),
    ]

    class Answered(Message):
        """An answer was given here (``error``: why it was refused, or None)."""

        def __init__(self, approval_id: str, error: str | None) -> None:
            super().__init__()
            self.approval_id = approval_id
            self.error = error

    def __init__(
        self, agent: Any, *, clock: Callable[[], float] = time.time, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.feed = ApprovalFeed(agent, self)
        self.clock = clock
        self.mode: str | None = None  # "edit" or "deny" while the line is open
        self._line_for: str | None = None  # the call the line answers

    def compose(self) -> ComposeResult:
        yield Static("", id="approvals-title", markup=False)
        yield OptionList(id="approvals-list")
        yield Static("", id="approvals-detail", markup=False)
        yield Input(id="approvals-line")
        yield Static(
            Content.styled("y approve · e edit & approve · n deny", "$text-muted"),
            id="approvals-actions",
        )

    def on_mount(self) -> None:
        self.display = False
        self.query_one("#approvals-line", Input).display = False
        self.run_worker(
            self.feed.run(),
            name="approval feed",
            group="approval-feed",
            exclusive=True,
            exit_on_error=False,
        )
        self.set_interval(TICK_S, self._tick)

    async def on_unmount(self) -> None:
        mine = [worker for worker in self.app.workers if worker.node is self]
        for worker in mine:
            worker.cancel()
        for worker in mine:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), 2.0)

    @property
    def calls(self) -> OptionList:
        return self.query_one("#approvals-list", OptionList)

    @property
    def line(self) -> Input:
        return self.query_one("#approvals-line", Input)

    @property
    def current(self) -> Any:
        """The cursor's call, or None."""
        records = self.feed.records
        index = self.calls.highlighted
        if not records:
            return None
        return records[index if index is not None and index < len(records) else 0]

    def focus_queue(self) -> bool:
        """Put the keyboard focus on the calls (False: none waits)."""
        if not self.feed.records:
            return False
        focus_now(self.calls)
        return True

    # -- what is shown -------------------------------------------------------------------------

    def refresh_view(self) -> None:
        records = self.feed.records
        calls = self.calls
        keep = self.current.id if self.current is not None else None
        calls.clear_options()
        calls.add_options([self._row(r) for r in records])
        ids = [r.id for r in records]
        if ids:
            calls.highlighted = ids.index(keep) if keep in ids else 0
        was_shown = self.display
        self.display = bool(records)
        if was_shown and not records and self.has_focus_within:
            self.screen.focus_next()
        if self._line_for is not None and self._line_for not in ids:
            self.action_leave_line()  # answered elsewhere meanwhile
        self._show_title()
        self._show_detail()

    def _row(self, record: Any) -> Content:
        """Two lines: which call (id, thread, age), then the tool and its input."""
        text = one_line(input_text(record.args))
        if len(text) > INPUT_CHARS:
            text = text[: INPUT_CHARS - 1] + "…"
        return Content.assemble(
            (record.id, "bold"),
            "  ",
            (f"{record.resource_id}/{record.thread_id}", "$accent"),
            "  ",
            (waited(self.clock() - record.created_at.timestamp()), "$text-muted"),
            "\n  ",
            (record.tool_name, "bold $text-warning"),
            f"({text})",
        )

    def _show_title(self) -> None:
        count = len(self.feed.records)
        title = Content.assemble(
            ("⏸ Approvals", "bold"),
            " · ",
            (f"{count} {'call waits' if count == 1 else 'calls wait'}", "bold"),
            ("  f10", "$text-muted"),
        )
        self.query_one("#approvals-title", Static).update(title)

    def _show_detail(self) -> None:
        record = self.current
        text = "" if record is None else f"run {record.run_id[:8]} · call {record.tool_call_id}"
        if record is not None and len(input_text(record.args)) > INPUT_CHARS:
            text += f"\n{input_text(record.args)}"  # the input whole, cut in its row
        self.query_one("#approvals-detail", Static).update(text)

    def _tick(self) -> None:
        if self.display and self.feed.records:
            calls = self.calls
            for index, record in enumerate(self.feed.records):
                calls.replace_option_prompt_at_index(index, self._row(record))

    # -- the feed ------------------------------------------------------------------------------

    def on_approval_feed_changed(self, message: ApprovalFeed.Changed) -> None:
        message.stop()
        self.feed.acknowledge()
        self.refresh_view()

    def on_approval_feed_arrived(self, message: ApprovalFeed.Arrived) -> None:
        message.stop()
        for record in message.records[:3]:
            self.notify(
                f"{record.tool_name}({one_line(input_text(record.args))})",
                title=f"⏸ waits for approval · {record.resource_id}/{record.thread_id} · f10",
                severity="warning",
                timeout=8,
                markup=False,
            )

    def on_approval_feed_failed(self, message: ApprovalFeed.Failed) -> None:
        message.stop()
        self.notify(message.error, title="approvals", severity="warning", timeout=8, markup=False)

    def on_option_list_option_highlighted(self, message: OptionList.OptionHighlighted) -> None:
        message.stop()
        self._show_detail()

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        message.stop()
        self.action_approve()

    # -- answers -------------------------------------------------------------------------------

    def action_nothing(self) -> None:
        """A key of the inbox's, pressed in the queue: not for the inbox's records."""

    def action_approve(self) -> None:
        record = self.current
        if record is not None:
            self._answer(record.id, "approve", None)

    def action_edit(self) -> None:
        self._open_line("edit", "the input as JSON; enter approves it")

    def action_deny(self) -> None:
        self._open_line("deny", "why not? (the model reads it); enter denies")

    def action_leave_line(self) -> None:
        line = self.line
        self.mode, self._line_for = None, None
        if line.display:
            line.display = False
            line.value = ""
            if self.feed.records:
                focus_now(self.calls)

    def _open_line(self, mode: str, placeholder: str) -> None:
        record = self.current
        if record is None:
            return
        self.mode, self._line_for = mode, record.id
        line = self.line
        line.placeholder = placeholder
        line.value = input_text(record.args) if mode == "edit" else ""
        line.display = True
        focus_now(line)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        approval_id, mode, text = self._line_for, self.mode, message.value.strip()
        if approval_id is None or mode is None:
            return
        if mode == "deny":
            if not text:
                self.notify(
                    "type why the call is denied: the model reads it",
                    title="deny",
                    severity="warning",
                )
                return
            self._answer(approval_id, "deny", text)
        else:
            try:
                edited = json.loads(text)
            except ValueError as error:
                self.notify(
                    f"not JSON: {error}", title="edited input", severity="error", markup=False
                )
                return
            self._answer(approval_id, "approve", edited)
        self.action_leave_line()

    @work(group="approvals-answer", exit_on_error=False)
    async def _answer(self, approval_id: str, how: str, given: Any) -> None:
        if how == "approve":
            error = await self.feed.approve(approval_id, given)
        else:
            error = await self.feed.deny(approval_id, str(given))
        if error is not None:
            self.notify(error, title=f"{how} refused", severity="error", markup=False)
        self.post_message(self.Answered(approval_id, error))
