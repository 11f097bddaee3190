"""What a pane does with its messages and its thread's model (``ThreadPane`` is one of these):
copy a message or one of its code blocks, quote it, retry the last answer, edit and resend
your last message; pick the thread's model, and say when it cannot answer here.

Which message an action may take is decided by ``tui_agent.app.message_actions`` (no Textual);
the store is reached through the pane's ``ThreadFeed``. Tested in
tests/app/test_message_actions.py and tests/app/test_thread_model.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message

from tui_agent.app import message_actions as rules
from tui_agent.app.focus import focus_now
from tui_agent.app.message_actions import CodeTurn, entry_text, quoted
from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.composer import Composer
from tui_agent.app.widgets.model_banner import ModelBanner
from tui_agent.app.widgets.transcript_view import TranscriptView

if TYPE_CHECKING:
    from tui_agent.app.bridge import SendRequest, ThreadFeed
    from tui_agent.app.widgets.pane_header import HeaderState


class PaneActions(Vertical):
    """The message and model half of a thread pane (its bindings merge into the pane's)."""

    # Not in the key bar (it is full already): f1 and the command palette list them.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f9", "retry", "Retry", show=False, id="pane.retry"),
        Binding("f4", "edit_last", "Edit last", show=False, id="pane.edit_last"),
        # Priority, as the app's keys that move the focus: a key typed right after it (q, c)
        # acts on the selected message instead of going into the composer.
        Binding("ctrl+up", "select_message", "Select msg", show=False, priority=True,
                id="pane.select_message"),
        Binding("ctrl+l", "pick_model", "Model", show=False, id="pane.pick_model"),
    ]

    feed: ThreadFeed
    header_state: HeaderState
    agent_model: str  # the agent's own model (what a thread without a choice runs on)

    class ModelPickRequested(Message):
        """Ask the app for the model picker (it knows the settings' models)."""

        def __init__(self, pane: PaneActions) -> None:
            super().__init__()
            self.pane = pane

    def __init__(self) -> None:
        super().__init__()
        self.code_turn = CodeTurn()
        self.editing: Entry | None = None  # your last message, being edited in the composer
        self.model_problem: str | None = None

    # what the pane itself provides
    def show_notice(self, text: str, *, error: bool = False, sticky: bool = False) -> None:
        raise NotImplementedError

    def key_for(self, binding_id: str) -> str:
        raise NotImplementedError

    def _transcript(self) -> TranscriptView:
        return self.query_one(TranscriptView)

    def _composer(self) -> Composer:
        return self.query_one(Composer)

    # -- the message an action takes -----------------------------------------------------------

    def _selected(self) -> Entry | None:
        """The selected message while the transcript has the focus (else None: the action
        takes its default message)."""
        view = self._transcript()
        return view.selected_entry() if view.has_focus_within else None

    def on_transcript_view_act(self, message: TranscriptView.Act) -> None:
        message.stop()
        handlers = {"copy": self.copy_entry, "copy_code": self.copy_code_of,
                    "quote": self.quote, "retry": self.retry_entry, "edit": self.edit}
        handlers[message.action](message.entry)

    def action_select_message(self) -> None:
        view = self._transcript()
        focus_now(view)
        view.select_last()

    # -- copy and quote ------------------------------------------------------------------------

    def last_answer_entry(self) -> Entry | None:
        for entry in reversed(self.feed.transcript.entries):
            if entry.kind == "assistant" and entry.text:
                return entry
        return None

    def last_answer(self) -> str | None:
        entry = self.last_answer_entry()
        return entry.text if entry is not None else None

    def action_copy_message(self) -> None:
        """The selected message (in the transcript), else the last answer."""
        entry = self._selected() or self.last_answer_entry()
        if entry is None:
            self.notify("nothing to copy yet", severity="warning")
            return
        self.copy_entry(entry)

    def action_copy_code(self) -> None:
        entry = self._selected() or self.last_answer_entry()
        if entry is None:
            self.notify("no code block in the last answer", severity="warning")
            return
        self.copy_code_of(entry)

    def copy_entry(self, entry: Entry) -> None:
        text = entry_text(entry)
        what = "the last answer" if entry is self.last_answer_entry() else f"the {entry.kind}"
        self._copy(text, f"{what} ({len(text)} characters)")

    def copy_code_of(self, entry: Entry) -> None:
        """Each press the message's next code block (1 of 3, 2 of 3, …)."""
        found = self.code_turn.next_block(entry)
        if found is None:
            self.notify("no code block in that message", severity="warning")
            return
        block, number, count = found
        which = f"code block {number} of {count}" if count > 1 else "a code block"
        self._copy(block, f"{which} ({len(block.splitlines())} lines)")

    def _copy(self, text: str, what: str) -> None:
        from tui_agent.app.clipboard import copy_text

        try:
            where = copy_text(text, self.app.copy_to_clipboard)
        except Exception as error:  # no clipboard at all: say so
            self.notify(f"copy failed: {error}", severity="error")
            return
        self.notify(f"copied {what} to the {where}", timeout=6)

    def quote(self, entry: Entry) -> None:
        """The message as a Markdown quote at the start of the composer, focused to answer."""
        composer = self._composer()
        composer.value = quoted(entry) + composer.value
        focus_now(composer)

    # -- retry ---------------------------------------------------------------------------------

    def action_retry(self) -> None:
        self.retry_entry(None)

    def retry_entry(self, entry: Entry | None) -> None:
        refusal = rules.retry_refusal(self.feed.transcript.entries, entry)
        if refusal is None and self.feed.active_run_id() is not None:
            refusal = "a run is live: wait for it, or abort it (escape) first"
        if refusal is not None:
            self.show_notice(refusal)
            return
        self._retry()

    @work(group="retry", exclusive=True)
    async def _retry(self) -> None:
        from tui_agent.app.bridge import TuiAgentError

        self._transcript().follow()
        try:
            run_id = await self.feed.retry()
        except TuiAgentError as error:
            self.show_notice(f"✗ {error}", error=True)
            return
        self.show_notice(f"↻ retry → run {run_id[:8]}: the old answer stays, superseded")

    # -- edit and resend -----------------------------------------------------------------------

    def action_edit_last(self) -> None:
        if self.editing is not None:
            self.stop_editing("edit cancelled")
            return
        self.edit(None)

    def edit(self, entry: Entry | None) -> None:
        composer = self._composer()
        refusal = rules.edit_refusal(self.feed.transcript.entries, entry, composer.identity.name)
        if refusal is not None:
            self.show_notice(refusal)
            return
        self.editing = rules.last_user(self.feed.transcript.entries)
        assert self.editing is not None
        composer.value = self.editing.text
        composer.border_title = f"editing your last message · {self.key_for('pane.edit_last')}" \
                                " cancels"
        focus_now(composer)

    def stop_editing(self, notice: str = "") -> None:
        self.editing = None
        composer = self._composer()
        composer.border_title = "queue" if composer.queue_mode else None
        if notice:
            composer.clear()
            self.show_notice(notice)

    @work(group="send")
    async def resend(self, entry: Entry, request: SendRequest) -> None:
        """Send ``request`` in place of ``entry`` (superseded with its answer)."""
        from tui_agent.app.bridge import TuiAgentError

        self._transcript().follow()
        try:
            route = await self.feed.resend_edited(entry.signal_id, entry.message_id, request)
        except TuiAgentError as error:
            self._composer().value = request.text  # nothing accepted is lost
            self.show_notice(f"✗ {error}", error=True)
            return
        self.show_notice(f"✎ edited and resent ↪ {route}")

    # -- the thread's model --------------------------------------------------------------------

    @property
    def thread_model(self) -> str:
        """The model the thread's next run answers on: its own choice, else the agent's."""
        return self.feed.model or self.agent_model

    def action_pick_model(self) -> None:
        self.post_message(self.ModelPickRequested(self))

    def on_model_banner_use_local(self, message: ModelBanner.UseLocal) -> None:
        message.stop()
        from tui_agent.app.thread_model import LOCAL_MODEL

        self.choose_model(LOCAL_MODEL)

    @work(group="model-choice", exclusive=True)
    async def choose_model(self, model: str) -> None:
        """Keep ``model`` with the thread (every terminal's runs on it use it)."""
        from tui_agent.app.bridge import TuiAgentError

        try:
            await self.feed.set_model(model)
        except TuiAgentError as error:
            self.show_notice(f"✗ {error}", error=True)
            return
        self.show_notice(f"model of {self.feed.resource_id}/{self.feed.thread_id}: {model}")
        await self.check_model()

    async def check_model(self) -> None:
        """Show the thread's model in the header, and the banner if it cannot answer here;
        load the cost map (litellm) once a priced model shows."""
        from tui_agent.app.thread_model import load_cost_map, model_problem

        model = self.thread_model
        self.header_state.model = model
        self.refresh_header()
        spec = self.feed.model or self.feed.agent.model
        problem = await model_problem(spec)
        banners = self.query(ModelBanner)
        if not self.is_attached or not banners:
            return  # the pane closed meanwhile
        self.model_problem = problem[0] if problem else None
        banners.first().show_problem(self.model_problem,
                                     picker_key=self.key_for("pane.pick_model"))
        if problem is None and isinstance(spec, str) and not spec.startswith("local/"):
            await load_cost_map()  # a provider's model string: litellm's map prices it
            if self.is_attached:
                self.refresh_header()

    def refresh_header(self) -> None:
        raise NotImplementedError
