"""One thread pane: its header, the live transcript, a status line and a composer.

The pane owns a ``ThreadFeed`` (the bridge to the core). Changes from the feed are applied to
the widgets at a bounded rate — ``FOCUSED_HZ`` for the focused pane, ``BACKGROUND_HZ`` for the
others — and not at all while the pane is hidden or scrolled up (it buffers and counts "N new
↓"), so four panes streaming at once leave the UI responsive.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from tui_agent.app.bridge import SendRequest, ThreadFeed, run_cost
from tui_agent.app.focus import focus_now
from tui_agent.app.layout import Place
from tui_agent.app.widgets.composer import Composer, Identity
from tui_agent.app.widgets.find_bar import FindBar, FindClosed
from tui_agent.app.widgets.model_banner import ModelBanner
from tui_agent.app.widgets.pane_actions import PaneActions
from tui_agent.app.widgets.pane_header import HeaderState, PaneHeader
from tui_agent.app.widgets.state_panel import StatePanel
from tui_agent.app.widgets.transcript_view import TranscriptView
from tui_agent.app.widgets.waiting_signals import WaitingSignals

FOCUSED_HZ = 12.0
BACKGROUND_HZ = 2.0
SYNC_GRID_S = 1.0 / 12  # every pane's syncs land on this app-wide grid (``until_sync_tick``)
SYNC_SLACK_S = 0.02  # how late a sync may have run and still keep its pane's next on the grid
NOTICE_S = 4.0  # how long a route or error line stays


def until_sync_tick(delay: float, now: float | None = None, tick: float = SYNC_GRID_S) -> float:
    """Seconds from ``now`` to the first tick of the app-wide grid of ``tick`` seconds at least
    ``delay`` away. Every pane syncs on the same grid, so the panes that stream at once change
    the screen in the same frame: one layout and one repaint a tick for all of them, not one
    per pane (tests/app/test_sync_grid.py::test_panes_sync_on_one_grid). A background pane
    syncs on a grid of its own rate (``1 / BACKGROUND_HZ``, a multiple of ``SYNC_GRID_S``): on
    the ``SYNC_GRID_S`` grid each would land on a tick of its own, a layout of the screen each
    (tests/app/test_sync_grid.py::test_background_panes_sync_together_on_a_focused_tick).

    A sync runs a little after its tick (a timer's lateness), and the next one is due a period
    after it: on a background grid up to ``SYNC_SLACK_S`` of that is forgiven, so a pane stays
    on the tick a period on instead of slipping to the one after (at 2 Hz that would halve its
    rate). The focused grid forgives nothing: there a slip costs one tick of 83 ms, and
    forgiving it made the focused pane sync (and lay out the screen) half as often again."""
    now = time.monotonic() if now is None else now
    slack = SYNC_SLACK_S if tick > SYNC_GRID_S else 0.0
    due = now + max(delay - slack, 0.001)
    ticks = math.ceil(due / tick - 1e-6)  # 1e-6: float error on a tick
    return max(0.001, ticks * tick - now)


class ThreadPane(PaneActions):
    DEFAULT_CSS = """
    ThreadPane {
        border: round $foreground 25%;
        height: 1fr;
        width: 1fr;
        &.-focused { border: round $border; }
        & > #pane-body { height: 1fr; }
        & > #pane-status { height: 1; color: $text-muted; padding: 0 1; display: none; }
        & > #pane-status.-shown { display: block; }
        & > #pane-status.-error { color: $text-error; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        # The composer keeps its editing keys (ctrl+u/k/w/x/e, home/end): none is taken here.
        Binding("escape", "abort", "Abort run", id="pane.abort"),
        Binding("ctrl+g", "toggle_attach", "Detach/attach", id="pane.detach"),
        Binding("pageup", "page(-1)", "Scroll up", show=False, id="pane.page_up"),
        Binding("pagedown", "page(1)", "Scroll down", show=False, id="pane.page_down"),
        Binding("ctrl+end", "follow", "Follow", show=False, id="pane.follow"),
        Binding("ctrl+home", "scroll_top", "Top", show=False, id="pane.top"),
        Binding("ctrl+y", "copy_message", "Copy answer", id="pane.copy_message"),
        Binding("ctrl+b", "copy_code", "Copy code", show=False, id="pane.copy_code"),
        Binding("f3", "toggle_state", "State", id="pane.toggle_state"),
        Binding("ctrl+f", "find", "Find", show=False, id="pane.find"),
        Binding("f12", "export", "Export", show=False, id="pane.export"),
    ]

    ALLOW_MAXIMIZE = True
    focused = reactive(False)

    class StateToggled(Message):
        """f3: the app shows, focuses or hides this pane's state panel (where depends on the
        room it has: ``tui_agent.app.layout``)."""

        def __init__(self, pane: ThreadPane) -> None:
            super().__init__()
            self.pane = pane

    class AbortRequested(Message):
        """Ask the app to confirm, then call ``pane.abort_now()``."""

        def __init__(self, pane: ThreadPane) -> None:
            super().__init__()
            self.pane = pane

    def __init__(self, agent: Any, resource_id: str, thread_id: str, *, identity: Identity,
                 agent_label: str, model_label: str, show_state: bool = False) -> None:
        super().__init__()
        self.agent = agent
        self.resource_id = resource_id
        self.thread_id = thread_id
        self.feed = ThreadFeed(agent, resource_id, thread_id, self)
        self.agent_model = model_label
        self.header_state = HeaderState(title="", thread=f"{resource_id}/{thread_id}",
                                        agent=agent_label, model=model_label)
        self._identity = identity
        self._last_sync = 0.0
        self._sync_timer: Any = None
        self._syncing = False  # a sync is under way (its widgets and header not all shown yet)
        self._notice_timer: Any = None
        self._sending = 0  # sends whose route is not decided yet
        self._aborting = False  # "aborting…" shows until the run's end arrives
        self._route_until_end = False  # the status line shows a route until its run ends
        self._last_ended: Any = None  # the last ended run the pane has seen
        self.state_place: Place = "side" if show_state else "hidden"
        self.state_panel = StatePanel(lambda: self.feed, shown=show_state, id="pane-side")

    @property
    def key(self) -> str:
        return f"{self.resource_id}/{self.thread_id}"

    @property
    def drained(self) -> bool:
        """Everything the thread's stream is known to hold is on screen (or buffered, if
        scrolled up): read by the feed (a run can end before its events are read), and shown."""
        return (self.feed.attached and not self._sync_timer and not self._syncing
                and not self.feed.changes_waiting and not self.feed.behind)

    def transcript_view(self) -> TranscriptView:
        return self.query_one(TranscriptView)

    def compose(self) -> ComposeResult:
        yield PaneHeader(self.header_state)
        with Horizontal(id="pane-body"):
            yield TranscriptView(self.feed.transcript, id="transcript")
            yield self.state_panel
        yield WaitingSignals(id="pane-waiting")
        yield FindBar(self, id="pane-find")
        yield Static("", id="pane-status", markup=False)
        yield ModelBanner(id="pane-model")
        yield Composer(self._identity, entries=lambda: self.feed.transcript.entries,
                       id="composer")

    async def on_mount(self) -> None:
        self._show_state_place()
        self.start_feed()

    def place_state(self, place: Place) -> None:
        """Where the state panel goes: beside the transcript, over it, or hidden."""
        if place != self.state_place:
            self.state_place = place
            if self.is_mounted:
                self._show_state_place()

    def _show_state_place(self) -> None:
        place = self.state_place
        self.state_panel.set_shown(place != "hidden")
        self.state_panel.set_class(place == "over", "-over")
        self.query_one(TranscriptView).display = place != "over"

    @work(exclusive=True, group="feed")
    async def start_feed(self) -> None:
        self.header_state.state = "connecting"
        try:
            await self.feed.start()
        except Exception as error:  # store unreadable: one line, never a traceback
            self.show_notice(f"✗ cannot open the thread: {error}", error=True)
            return
        await self.check_model()  # the thread's model, and whether it can answer here

    async def on_unmount(self) -> None:
        await self.feed.close()

    # -- syncing the widgets with the feed -----------------------------------------------------

    def on_thread_feed_changed(self, message: ThreadFeed.Changed) -> None:
        message.stop()
        self.schedule_sync(urgent=message.urgent)

    @property
    def loop_ended(self) -> bool:
        """The pane was mounted and its message loop has ended: a timer set now never fires
        and is never stopped (its workers may still be finishing)."""
        return self.is_mounted and not self.is_running

    def schedule_sync(self, *, urgent: bool = False) -> None:
        """Sync the widgets soon: at most FOCUSED_HZ (or BACKGROUND_HZ) times a second, or at
        once when ``urgent`` (a run ended: its last words and status show without waiting).

        Nothing is scheduled once the pane's message loop has ended: a worker still finishing
        (``start_feed``'s model check) at quit would leave a timer no one stops
        (tests/app/test_app_panes.py::test_a_pane_closed_while_its_feed_starts_leaves_no_timer)."""
        if self.loop_ended:
            return
        period = 1.0 / (FOCUSED_HZ if self.focused else BACKGROUND_HZ)
        grid = SYNC_GRID_S if self.focused else period
        wait = until_sync_tick(period - (time.monotonic() - self._last_sync), tick=grid)
        if urgent and self._sync_timer is not None:
            self._sync_timer.stop()
            self._sync_timer = None
        if self._sync_timer is None:
            self._sync_timer = self.set_timer(0.001 if urgent else wait, self._sync)

    def on_thread_feed_state_changed(self, message: ThreadFeed.StateChanged) -> None:
        message.stop()
        self.query_one(StatePanel).lane_changed(message.lane_id)

    def action_toggle_state(self) -> None:
        self.post_message(self.StateToggled(self))

    def on_thread_feed_failed(self, message: ThreadFeed.Failed) -> None:
        message.stop()
        self.show_notice(f"✗ {message.error}", error=True)

    async def _sync(self) -> None:
        self._sync_timer = None
        self._syncing = True
        try:
            await self._sync_now()
        finally:
            self._syncing = False

    async def _sync_now(self) -> None:
        self._last_sync = time.monotonic()
        self.feed.acknowledge()
        view = self.query_one(TranscriptView)
        ended = self.feed.transcript.last_ended
        if ended is not self._last_ended:
            self._last_ended = ended
            self._release_paint_caches()
            if self._route_until_end:
                self._route_until_end = False
                self.clear_notice()
        if self.display:
            pruned = await view.sync(compact=not self.focused)
            if pruned:
                self.feed.has_older = True
            elif self.feed.has_older:
                view.call_after_refresh(self._fill_view)
        self._update_header()
        self.query_one(WaitingSignals).show_waiting(self.feed.waiting)
        self._show_unseen(view)

    def _release_paint_caches(self) -> None:
        """Textual keeps the lines it painted of a widget (and the crops made of them) until
        the widget is refreshed whole; in a pane that streams for hours they pile up with all
        that scrolled through it (benchmarks/bench_app_soak.py). Once per ended run, let them
        go: the next frame repaints what is visible of the pane."""
        for widget in self.walk_children(with_self=True):
            widget.refresh()

    def _update_header(self) -> None:
        state = self.header_state
        transcript = self.feed.transcript
        state.title = self.feed.title or ""
        state.thread_tokens = self.feed.thread_tokens
        last = transcript.last_run
        live = self.feed.active_run_id()
        if not self.feed.attached and state.state != "connecting":
            state.state = "detached"
        elif live is not None:
            if state.state not in ("running", "waiting"):
                state.started_at = time.monotonic()
            state.state = "waiting" if transcript.waiting_calls else "running"
        elif self._sending:
            state.state = "sending"
        elif last is not None and last.status in ("aborted", "interrupted", "failed"):
            if state.state != last.status and self._aborting:
                self._aborting = False
                self.clear_notice()  # "aborting…" is answered by the marker
            state.state = last.status
        elif self.feed.attached:
            state.state = "idle"
        ended = transcript.last_ended
        if ended is not None:
            state.run_tokens = ended.input_tokens + ended.output_tokens
            state.cost = run_cost(state.model, ended.input_tokens, ended.output_tokens)
        state.thread_cost = run_cost(state.model, *self.feed.thread_usage)
        self.query_one(PaneHeader).show()

    def refresh_header(self) -> None:
        self.schedule_sync()  # the header repaints with the pane's next sync

    def _show_unseen(self, view: TranscriptView) -> None:
        if not view.following and view.unseen:
            self.show_notice(f"↓ {view.unseen} new · {self.key_for('pane.follow')} or the "
                             "bottom follows again",
                             sticky=True)

    # -- status line ---------------------------------------------------------------------------

    def show_notice(self, text: str, *, error: bool = False, sticky: bool = False) -> None:
        """One line under the transcript (it takes no row while empty); a plain notice goes
        after NOTICE_S, an error or a sticky one stays until replaced."""
        status = self.query_one("#pane-status", Static)
        status.update(text)
        status.set_class(error, "-error")
        status.set_class(bool(text), "-shown")
        if self._notice_timer is not None:
            self._notice_timer.stop()
            self._notice_timer = None
        if not sticky and not error and not self.loop_ended:
            self._notice_timer = self.set_timer(NOTICE_S, self.clear_notice)

    def clear_notice(self) -> None:
        self.show_notice("", sticky=True)

    # -- focus ---------------------------------------------------------------------------------

    def watch_focused(self, focused: bool) -> None:
        self.set_class(focused, "-focused")

    def on_descendant_focus(self) -> None:
        self.post_message(PaneFocused(self))

    def on_click(self) -> None:
        self.post_message(PaneFocused(self, clicked=True))

    def toggle_queue_mode(self) -> None:
        self.query_one(Composer).action_toggle_queue()

    def focus_composer(self) -> None:
        focus_now(self.query_one(Composer))

    @property
    def composer_mounted(self) -> bool:
        """Whether the composer can take the focus now (a new pane's is mounted later)."""
        found = self.query(Composer)
        return bool(found) and found.first().is_mounted

    def set_unread(self, count: int) -> None:
        """Show the thread's unread inbox records (status pending or delivered) in the header."""
        if count != self.header_state.unread:
            self.header_state.unread = count
            for header in self.query(PaneHeader):
                header.show()

    # -- sending -------------------------------------------------------------------------------

    def on_composer_submitted(self, message: Composer.Submitted) -> None:
        message.stop()
        parsed = message.parsed
        request = SendRequest(text=parsed.text, attributes=message.composer.identity
                              .as_attributes(), queued=parsed.queued,
                              signal_type=parsed.signal_type, tag_name=parsed.tag_name)
        if self.editing is not None:  # f4: in place of your last message
            edited = self.editing
            self.stop_editing()
            self.resend(edited, request)
            return
        self._send(request)

    def on_composer_invalid(self, message: Composer.Invalid) -> None:
        message.stop()
        self.show_notice(message.error, error=True)

    @work(group="send")
    async def _send(self, request: SendRequest) -> None:
        from tui_agent.app.bridge import TuiAgentError

        self.query_one(TranscriptView).follow()
        self._sending += 1
        self._update_header()  # "waiting for the lease" until the route is decided
        try:
            route = await self.feed.send(request)
        except TuiAgentError as error:
            self.show_notice(f"✗ {error}", error=True)
            return
        finally:
            self._sending -= 1
        # A route into a run says so until that run ends (then the answer or its marker says
        # the rest); any other route is a passing notice.
        self._route_until_end = "run" in str(route)
        self.show_notice(f"↪ {route}", sticky=self._route_until_end)

    # -- controls ------------------------------------------------------------------------------

    def action_abort(self) -> None:
        if self.feed.active_run_id() is None:
            self.show_notice("no live run to abort")
            return
        self.post_message(self.AbortRequested(self))

    def abort_now(self) -> None:
        aborted = self.feed.abort()
        self._aborting = aborted
        self.show_notice("⏹ aborting the live run…" if aborted else "no live run to abort",
                         sticky=aborted)

    async def action_toggle_attach(self) -> None:
        if self.feed.attached:
            self.feed.detach()
            self.header_state.state = "detached"  # at once, also before the first sync
            self.query_one(PaneHeader).show()
            key = self.key_for("pane.detach")
            self.show_notice(f"⊘ detached: the run goes on; {key} to watch again", sticky=True)
        else:
            await self._reattach()

    async def _reattach(self) -> None:
        """A fresh feed: catches up from memory and the live run. The transcript view is
        kept and shown the new feed's transcript: a sync that runs while this awaits (the
        pane's timer, the old feed's last change) always finds one view, never none."""
        await self.feed.close()
        self.feed = ThreadFeed(self.agent, self.resource_id, self.thread_id, self)
        await self.transcript_view().show_transcript(self.feed.transcript)
        self.show_notice("attached")
        self.start_feed()

    def key_for(self, binding_id: str) -> str:
        """The key bound to ``binding_id`` now (after any keymap), as the footer shows it."""
        for active in self.screen.active_bindings.values():
            if active.binding.id == binding_id:
                return self.app.get_key_display(active.binding)
        return "?"

    def action_page(self, direction: int) -> None:
        view = self.query_one(TranscriptView)
        if direction < 0:
            view.scroll_page_up(animate=False)
        else:
            view.scroll_page_down(animate=False)

    def action_scroll_top(self) -> None:
        self.query_one(TranscriptView).scroll_home(animate=False)

    def action_follow(self) -> None:
        self.query_one(TranscriptView).follow()
        self.clear_notice()
        self.schedule_sync()

    def on_transcript_view_near_top(self, message: TranscriptView.NearTop) -> None:
        message.stop()
        if self.feed.has_older:
            self._load_older()

    def _fill_view(self) -> None:
        """A view that cannot scroll yet could never reach its top to page older history in:
        page it in now (a pane opens with one screenful, see ``FIRST_PAGE``)."""
        view = self.query_one(TranscriptView)
        if self.feed.has_older and view.max_scroll_y == 0 and view.size.height:
            self._load_older()

    @work(exclusive=True, group="older")
    async def _load_older(self) -> None:
        count = await self.feed.load_older()
        if count:
            await self.query_one(TranscriptView).sync()

    def on_transcript_view_follow_changed(self, message: TranscriptView.FollowChanged) -> None:
        message.stop()
        if message.following:
            self.clear_notice()
            self.schedule_sync()

    # -- find and export -----------------------------------------------------------------------

    def action_find(self) -> None:
        """ctrl+f: the find bar (the thread's whole history, from the store's index)."""
        self.query_one(FindBar).open()

    def on_find_closed(self, message: FindClosed) -> None:
        message.stop()
        self.focus_composer()

    @work(group="export")
    async def action_export(self) -> None:
        """f12: the thread whole as Markdown and JSON (``tui-agent export``), delivered as
        the app delivers files: saved to the downloads folder, or downloaded by the browser
        under ``tui-agent serve``."""
        import io

        from tui_agent.app.bridge import TuiAgentError

        try:
            texts = {fmt: await self.feed.export_text(fmt) for fmt in ("md", "json")}
        except TuiAgentError as error:
            self.show_notice(f"✗ export: {error}", error=True)
            return
        name = f"{self.resource_id}-{self.thread_id}".replace("/", "_")
        for fmt, text in texts.items():
            self.app.deliver_text(io.StringIO(text), save_filename=f"{name}.{fmt}")
        self.show_notice(f"⇩ exported {name}.md and {name}.json")


class PaneFocused(Message):
    """Focus went into a pane (``clicked``: by the mouse, anywhere on it)."""

    def __init__(self, pane: ThreadPane, *, clicked: bool = False) -> None:
        super().__init__()
        self.pane = pane
        self.clicked = clicked
