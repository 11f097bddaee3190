"""``TuiAgentApp``: a grid of live thread panes on one agent.

As many panes as the terminal has room for show at once (``tui_agent/app/layout.py``: one at
80×24, two at 120×35, a 2×2 grid at 200×50); more stay open as tabs (in the pane bar,
``f6`` cycles through them all). Every binding has an id, so keys can be remapped
(``App.set_keymap``); the footer and the help panel show the effective keys.

Start-up paints first: given a ``boot`` coroutine instead of a config, the app shows its frame
at once and only then reads the settings, builds the agent and imports the panes (seconds of
imports on a slow machine), so the first screen is as fast as a bare Textual app's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.geometry import Size
from textual.screen import Screen

from tui_agent.app.commands import palette_commands
from tui_agent.app.focus import focus_now
from tui_agent.app.gc_policy import SWEEPER, freeze_late_imports
from tui_agent.app.layout import MEDIUM, plan_layout
from tui_agent.app.theme_files import (
    DEFAULT_THEME,
    discover_themes,
    remember_theme,
    remembered_theme,
)
from tui_agent.app.widgets.key_bar import KeyBar
from tui_agent.app.widgets.pane_bar import PaneBar, Tab

if TYPE_CHECKING:  # loaded after the first paint: the panes and the sidebar import the core
    from tui_agent.app.screens.thread_picker import ThreadChoice
    from tui_agent.app.widgets.composer import Identity
    from tui_agent.app.widgets.inbox_sidebar import InboxSidebar
    from tui_agent.app.widgets.pane_actions import PaneActions
    from tui_agent.app.widgets.thread_pane import PaneFocused, ThreadPane


def binding_scopes() -> dict[str, list[Any]]:
    """Every binding with an id, grouped by what is live at the same time."""
    from tui_agent.app.screens.confirm import ConfirmScreen
    from tui_agent.app.screens.help import HelpScreen
    from tui_agent.app.screens.model_picker import ModelPicker
    from tui_agent.app.screens.thread_picker import ThreadPicker
    from tui_agent.app.widgets.approvals_queue import ApprovalsQueue
    from tui_agent.app.widgets.composer import Composer
    from tui_agent.app.widgets.inbox_list import InboxList
    from tui_agent.app.widgets.inbox_sidebar import InboxSidebar
    from tui_agent.app.widgets.pane_actions import PaneActions
    from tui_agent.app.widgets.state_panel import StatePanel
    from tui_agent.app.widgets.thread_pane import ThreadPane
    from tui_agent.app.widgets.tool_call import ToolCall
    from tui_agent.app.widgets.transcript_view import TranscriptView

    return {
        "main": [*TuiAgentApp.BINDINGS, *ThreadPane.BINDINGS, *PaneActions.BINDINGS,
                 *Composer.BINDINGS, *ToolCall.BINDINGS, *TranscriptView.BINDINGS],
        "picker": list(ThreadPicker.BINDINGS),
        "model": list(ModelPicker.BINDINGS),
        "confirm": list(ConfirmScreen.BINDINGS),
        "help": list(HelpScreen.BINDINGS),
        "inbox": [*InboxSidebar.BINDINGS, *InboxList.BINDINGS],
        "approvals": list(ApprovalsQueue.BINDINGS),
        "state": list(StatePanel.BINDINGS),  # escape repeats pane.abort on purpose
    }


@dataclass
class AppConfig:
    """What the command line decided: the agent, the threads to open, who you are."""

    agent: Any
    threads: list[tuple[str, str]]
    identity: Identity
    agent_label: str
    model_label: str
    default_resource: str
    store_label: str = ""
    warm_model: bool = True  # load the model (litellm, the local server) in the background
    demo: bool = False
    extra_css: list[str] = field(default_factory=list)
    keymap: dict[str, str] = field(default_factory=dict)  # binding id → keys (settings)
    theme: str | None = None  # the settings' theme; None: the remembered one
    show_inbox: bool = False  # the inbox sidebar, where there is room (settings: show_inbox)
    show_state: bool = False  # the focused pane's state panel, where there is room
    remember: Callable[[str, bool], object] | None = None  # keeps a toggle's choice (settings)
    models: list[str] = field(default_factory=list)  # the settings' model strings (the picker)
    notices: list[str] = field(default_factory=list)  # start-up problems (an MCP server's)


class TuiAgentApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "tui-agent"
    PAUSE_GC_ON_SCROLL = True
    AUTO_FOCUS = None  # the app focuses the newest pane's composer itself
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+o", "open_thread", "Open", priority=True, id="app.open_thread"),
        Binding("ctrl+r", "swap_thread", "Swap", priority=True, id="app.swap_thread"),
        # The keys that move the focus are priority: the app acts on them as they arrive, so a
        # key typed right after f2/f6/f8/f10 goes where it sent the focus (not to the widget it
        # left; ``_focus`` focuses a mounted pane's composer at once).
        Binding("f8", "close_pane", "Close", priority=True, id="app.close_pane"),
        Binding("f6", "focus_pane(1)", "Next pane", priority=True, id="app.next_pane"),
        Binding("shift+f6", "focus_pane(-1)", "Prev pane", show=False, priority=True,
                id="app.prev_pane"),
        Binding("f11", "toggle_maximize", "Maximise", id="app.maximize"),
        Binding("f1", "toggle_help", "Help", id="app.help"),
        Binding("f2", "toggle_inbox", "Inbox", priority=True, id="app.toggle_inbox"),
        Binding("f10", "approvals", "Approvals", show=False, priority=True, id="app.approvals"),
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
    ]

    def __init__(self, config: AppConfig | None = None, *,
                 boot: Callable[[], Awaitable[AppConfig]] | None = None,
                 extra_css: list[str] | None = None) -> None:
        """``config``, or ``boot``: what builds it once the first screen is painted."""
        own = self.CSS_PATH  # a subclass's own (the tests' snapshot apps) wins
        css: list[str | PurePath] = [*(own if isinstance(own, list) else [own] if own else []),
                                     *(config.extra_css if config else []), *(extra_css or [])]
        super().__init__(css_path=css)
        if config is None and boot is None:
            from tui_agent.app.bridge import ConfigError

            raise ConfigError("TuiAgentApp needs a config or a boot coroutine")
        self._config = config
        self._boot = boot
        self.startup_error: BaseException | None = None  # why boot failed (the CLI says it)
        self.panes: list[ThreadPane] = []  # every open pane, in the order they were opened
        self._recent: list[ThreadPane] = []  # the same, least recently shown first
        self._theme_errors: list[str] = []
        self._demo_stop: Any = None
        self._unread: dict[str, int] = {}  # inbox records pending or delivered, per thread
        self._focus_pending: ThreadPane | None = None  # moved by the app, not landed yet
        self.crash: BaseException | None = None  # the unhandled exception that ended the app
        self.show_inbox = config.show_inbox if config else False
        self.show_state = config.show_state if config else False
        self.inbox_open = False  # opened over the panes (no room for a sidebar)
        self.state_open = False  # opened over the focused pane's transcript
        self.plan = plan_layout(80, 24, 0, show_inbox=False, show_state=False)
        self._terminal_size = Size(80, 24)  # as the last resize said
        self._keymap_in_use: dict[str, str] = {}  # binding id → keys, as checked

    # -- a crash -------------------------------------------------------------------------------

    def _handle_exception(self, error: Exception) -> None:
        """Textual's hook for an unhandled exception (it ends the app with return code 1):
        keep the first one for the crash file (``tui_agent.app.crash``)."""
        if self.crash is None:
            self.crash = error
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        """Textual would print the traceback with every frame's local variables (a key may be
        one) to the terminal: the crash file has it instead, redacted. Exit as Textual does."""
        self.bell()
        self._close_messages_no_wait()  # as Textual's own: ends the app even mid-start-up

    # -- layout --------------------------------------------------------------------------------

    @property
    def config(self) -> AppConfig:
        if self._config is None:
            raise RuntimeError("the app is still starting")
        return self._config

    @property
    def ready(self) -> bool:
        """The agent is built and the panes can open (at once when given a config)."""
        return self._config is not None

    def compose(self) -> ComposeResult:
        yield PaneBar(id="pane-bar")
        with Horizontal(id="main"):
            yield Container(id="panes")
        yield KeyBar()

    async def on_mount(self) -> None:
        self._load_themes()
        if self._config is not None:
            await self._start(self._config)
        else:
            self.call_after_refresh(self._boot_then_start)  # after the first paint

    @work(group="boot", exit_on_error=False)
    async def _boot_then_start(self) -> None:
        assert self._boot is not None
        try:
            config = await self._boot()
        except Exception as error:  # a bad settings file, a missing key: the CLI prints it
            self.startup_error = error
            self.exit(return_code=2)
            return
        self._config = config
        await self._start(config)

    async def _start(self, config: AppConfig) -> None:
        from tui_agent.app.widgets.inbox_sidebar import InboxSidebar

        if config.theme and config.theme in self.available_themes:
            self.theme = config.theme
        self.show_inbox, self.show_state = config.show_inbox, config.show_state
        # The app answers what others leave on the store's threads (digests, held wakes), with
        # or without a pane open (issue 21; tests/test_cli_notify.py).
        config.agent.runtime.host()
        self._apply_keymap()
        inbox = InboxSidebar(config.agent.memory, pane_threads=self._pane_threads, id="inbox")
        await self.query_one("#main").mount(inbox)
        from tui_agent.app.widgets.approvals_queue import ApprovalsQueue

        await inbox.mount(ApprovalsQueue(config.agent, id="approvals"), before=0)
        for resource_id, thread_id in config.threads:
            self.open_pane(resource_id, thread_id)
        if not config.threads:
            self._update_bar()
        for notice in config.notices:
            self.notify(notice, title="MCP", severity="warning", timeout=15)
        if config.warm_model:
            self._warm_model()
        if config.demo:
            self._run_demo()
        self.apply_layout()

    def _load_themes(self) -> None:
        themes, self._theme_errors = discover_themes()
        for theme in themes:
            self.register_theme(theme)
        wanted = (self._config and self._config.theme) or remembered_theme() or DEFAULT_THEME
        self.theme = wanted if wanted in self.available_themes else DEFAULT_THEME
        for error in self._theme_errors:
            self.notify(error, title="theme skipped", severity="warning", timeout=8)

    def _apply_keymap(self) -> None:
        """The settings' keymap, checked first: unknown ids and clashes are warnings."""
        from tui_agent.app.keymap import check_keymap

        usable, warnings = check_keymap(self.config.keymap, binding_scopes())
        self._keymap_in_use = dict(usable)
        self.set_keymap(usable)
        for warning in warnings:
            self.notify(warning, title="keymap", severity="warning", timeout=10)

    def watch_theme(self, name: str) -> None:
        if self.is_mounted:  # remember a choice, not the start-up default
            remember_theme(name)

    # -- panes ---------------------------------------------------------------------------------

    def open_pane(self, resource_id: str, thread_id: str) -> ThreadPane:
        """Open (or focus, if open) a pane on the thread."""
        for pane in self.panes:
            if (pane.resource_id, pane.thread_id) == (resource_id, thread_id):
                self.show_pane(pane)
                return pane
        from tui_agent.app.widgets.thread_pane import ThreadPane

        config = self.config
        pane = ThreadPane(config.agent, resource_id, thread_id, identity=config.identity,
                          agent_label=config.agent_label, model_label=config.model_label)
        pane.set_unread(self._unread.get(thread_id, 0))
        self.panes.append(pane)
        self._recent.append(pane)
        self.query_one("#panes").mount(pane)
        self.show_pane(pane)
        return pane

    def visible_panes(self) -> list[ThreadPane]:
        return [p for p in self.panes if p.display]

    def show_pane(self, pane: ThreadPane) -> None:
        """Make ``pane`` visible (the least recently shown go to tabs), focus it."""
        if pane in self._recent:
            self._recent.remove(pane)
            self._recent.append(pane)
        self._focus(pane)

    def on_resize(self, event: events.Resize) -> None:
        self.apply_layout(event.size)  # the app's own size is updated after its handlers

    def apply_layout(self, size: Size | None = None) -> None:
        """Place the panes, the inbox and the state panel for the terminal's size
        (``tui_agent.app.layout``); cheap when nothing moves."""
        width, height = size or self.size
        self._terminal_size = Size(width, height)
        plan = self.plan = plan_layout(width, height, len(self.panes),
                                       show_inbox=self.show_inbox, show_state=self.show_state,
                                       inbox_open=self.inbox_open, state_open=self.state_open)
        visible = self._recent[-plan.visible:] if self.panes else []
        for each in self.panes:
            shown = each in visible
            if shown and not each.display:
                each.schedule_sync()  # it buffered while hidden: show what it missed
            each.display = shown
            each.place_state(plan.state if each.focused else "hidden")
        grid = self.query_one("#panes")
        grid.styles.grid_size_columns = plan.columns
        grid.styles.grid_size_rows = plan.rows
        grid.display = plan.inbox != "over"
        inbox = self._inbox()
        if inbox is not None:
            inbox.display = plan.inbox != "hidden"
            inbox.styles.width = plan.inbox_width if plan.inbox == "side" else "1fr"
        self._update_bar()

    def _focus(self, pane: ThreadPane, *, to_composer: bool = True) -> None:
        """Make ``pane`` the focused pane; ``to_composer``: and put the keyboard focus in its
        composer (not when the focus landed inside the pane by Tab or a click: it stays)."""
        for each in self.panes:
            each.focused = each is pane
        if to_composer:
            self._focus_pending = pane
            if pane.is_attached and pane.composer_mounted:
                pane.focus_composer()  # now: a key typed right behind f6/f8 lands there
                self.call_after_refresh(self._focus_landed, pane)
            else:  # a pane still being mounted: once it is
                self.call_after_refresh(self._focus_composer, pane)
        self.apply_layout()  # the state panel goes with the focus

    def _focus_composer(self, pane: ThreadPane) -> None:
        # Panes opened in a burst each schedule this: only the pane still meant to have the focus
        # takes it, or a late callback would move the focus (and the app's idea of it) back.
        if pane.focused and pane.is_attached:
            pane.focus_composer()
        if self._focus_pending is pane:
            self.call_after_refresh(self._focus_landed, pane)

    def _focus_landed(self, pane: ThreadPane) -> None:
        if self._focus_pending is pane:
            self._focus_pending = None

    def focused_pane(self) -> ThreadPane | None:
        for pane in self.panes:
            if pane.focused:
                return pane
        return None

    def _update_bar(self) -> None:
        tabs = [Tab(pane.key, pane.focused, pane.display, pane.header_state.unread)
                for pane in self.panes]
        toggles = [("inbox", "✉ inbox", self.plan.inbox != "hidden"),
                   ("state", "◧ state", self.plan.state != "hidden")]
        label = self._config.store_label if self._config else ""
        note = f"store {label}" if label else ""
        if not self.panes:
            note = "no thread open — ctrl+o opens one" if self.ready else "starting…"
        self.query_one(PaneBar).show(tabs, toggles, note)

    def on_pane_bar_tab_clicked(self, message: PaneBar.TabClicked) -> None:
        if 0 <= message.index < len(self.panes):
            self.show_pane(self.panes[message.index])

    def on_pane_bar_toggle_clicked(self, message: PaneBar.ToggleClicked) -> None:
        if message.name == "inbox":
            self.action_toggle_inbox()
        elif (pane := self.focused_pane()) is not None:
            self.toggle_state(pane)

    def _choose(self, name: str, value: bool) -> None:
        """A sidebar shown or hidden by hand: kept in the settings file for next time."""
        setattr(self, name, value)
        remember = self._config.remember if self._config else None
        if remember is not None:
            try:
                remember(name, value)
            except OSError as error:  # a read-only settings file: this session only
                self.notify(f"not kept in the settings: {error}", severity="warning")

    def _forget(self, pane: ThreadPane) -> None:
        self.panes.remove(pane)
        self._recent.remove(pane)

    def on_pane_focused(self, message: PaneFocused) -> None:
        pane = message.pane
        if pane.focused or pane not in self.panes:
            return
        pending = self._focus_pending
        if pending is not None and pending is not pane and not message.clicked:
            return  # focus from before the app moved it on (keys, a new pane): stale
        widget = self.focused  # a stale focus event (focus has moved on since) is ignored
        inside = widget is not None and pane in widget.ancestors_with_self
        if message.clicked or inside:
            self._focus(pane, to_composer=not inside)

    def action_focus_pane(self, step: int) -> None:
        if not self.panes:
            return
        current = self.focused_pane()
        index = self.panes.index(current) if current in self.panes else -1
        target = self.panes[(index + step) % len(self.panes)]
        if target.display:
            self._focus(target)
        else:
            self.show_pane(target)

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif (pane := self.focused_pane()) is not None:
            screen.maximize(pane, container=False)

    async def action_close_pane(self) -> None:
        pane = self.focused_pane()
        if pane is None:
            return
        self._forget(pane)
        await pane.remove()
        SWEEPER.released()
        if self._recent:
            self.show_pane(self._recent[-1])
        else:
            self.apply_layout()

    # -- inbox ---------------------------------------------------------------------------------

    def _pane_threads(self) -> set[str]:
        return {pane.thread_id for pane in self.panes}

    def _inbox(self) -> InboxSidebar | None:
        """The sidebar, once the app is ready: importing its class earlier would load the core
        before the first frame (``apply_layout`` runs at the first resize)."""
        if not self.ready:
            return None
        from tui_agent.app.widgets.inbox_sidebar import InboxSidebar

        found = self.query(InboxSidebar)
        return found.first() if found else None

    def action_approvals(self) -> None:
        """Focus the approvals queue (above the inbox: shown with it), if a call waits."""
        if not self.ready:
            return
        from tui_agent.app.widgets.approvals_queue import ApprovalsQueue

        queue = self.query_one(ApprovalsQueue)
        if not queue.feed.records:
            self.notify("no tool call waits for approval", title="approvals", timeout=4)
            return
        if self.plan.inbox == "hidden":
            self.action_toggle_inbox()
        queue.focus_queue()

    def action_toggle_inbox(self) -> None:
        """Hidden: show and focus it. Shown, focus elsewhere: focus it. Focused: hide it.
        Where there is room it is a sidebar (the choice is kept), else it covers the panes."""
        inbox = self._inbox()
        if inbox is None:
            return
        if self.plan.inbox == "hidden":
            if self._terminal_size.width >= MEDIUM:
                self._choose("show_inbox", True)
            else:
                self.inbox_open = True
            self.apply_layout()
            focus_now(inbox.inbox_list)
            return
        if not inbox.has_focus_within:
            focus_now(inbox.inbox_list)
            return
        if self.plan.inbox == "side":
            self._choose("show_inbox", False)
        self.inbox_open = False
        self.apply_layout()
        if (pane := self.focused_pane()) is not None:
            pane.focus_composer()

    def on_thread_pane_state_toggled(self, message: ThreadPane.StateToggled) -> None:
        self.toggle_state(message.pane)

    def toggle_state(self, pane: ThreadPane) -> None:
        """The same three steps for the focused pane's state panel: beside the transcript where
        it keeps its width (the choice is kept), else over it until closed."""
        if not pane.focused:
            self._focus(pane)
        panel = pane.state_panel
        if self.plan.state == "hidden":
            roomy = plan_layout(*self._terminal_size, len(self.panes),
                                show_inbox=self.show_inbox,
                                show_state=True).state == "side"
            if roomy:
                self._choose("show_state", True)
            else:
                self.state_open = True
            self.apply_layout()
            panel.focus_panel()
            return
        focused = self.focused
        if focused is None or panel not in focused.ancestors:
            panel.focus_panel()
            return
        if self.plan.state == "side":
            self._choose("show_state", False)
        self.state_open = False
        self.apply_layout()
        pane.focus_composer()

    def on_inbox_sidebar_open_requested(self, message: InboxSidebar.OpenRequested) -> None:
        from tui_agent.app.widgets.inbox_reveal import reveal_delivery

        for record in message.targets:  # each thread opened or focused, then scrolled
            pane = self.open_pane(record.resource_id, record.thread_id)
            self.run_worker(reveal_delivery(pane, record), group="inbox-reveal",
                            exit_on_error=False)

    def on_inbox_sidebar_unread_changed(self, message: InboxSidebar.UnreadChanged) -> None:
        self._unread = message.counts
        for pane in self.panes:
            pane.set_unread(message.counts.get(pane.thread_id, 0))
        self._update_bar()

    # -- thread picker -------------------------------------------------------------------------

    def action_open_thread(self) -> None:
        if self.ready:
            self._pick(replace=False)

    def action_swap_thread(self) -> None:
        if self.ready:
            self._pick(replace=True)

    def _pick(self, replace: bool) -> None:
        """Push the thread picker now (its choices load in it), so the keys typed right behind
        ctrl+o / ctrl+r go into its search field."""
        from tui_agent.app.bridge import search_threads
        from tui_agent.app.screens.thread_picker import ThreadPicker

        if isinstance(self.screen, ThreadPicker):
            return  # one picker at a time
        agent = self.config.agent
        picker = ThreadPicker([], self.config.default_resource,
                              search=lambda query: search_threads(agent, query),
                              load=self._thread_choices)
        self.push_screen(picker, callback=partial(self._picked, replace))

    async def _picked(self, replace: bool, choice: ThreadChoice | None) -> None:
        if choice is None:
            return
        current = self.focused_pane()
        if replace and current is not None:
            self._forget(current)
            await current.remove()
            SWEEPER.released()
        self.open_pane(choice.resource_id, choice.thread_id)

    async def _thread_choices(self) -> list[ThreadChoice]:
        from tui_agent.app.bridge import thread_listing
        from tui_agent.app.screens.thread_picker import ThreadChoice

        return [
            ThreadChoice(t.resource_id, t.id, t.title or "", *activity, updated_at=t.updated_at)
            for t, activity in await thread_listing(self.config.agent)
        ]

    # -- the model of a thread ------------------------------------------------------------------

    @work(group="model-picker", exclusive=True)
    async def on_pane_actions_model_pick_requested(
        self, message: PaneActions.ModelPickRequested
    ) -> None:
        """The picker (the local model, the settings' models, any string typed), then the
        pane keeps the choice with its thread."""
        from tui_agent.app.screens.model_picker import ModelPicker
        from tui_agent.app.thread_model import check_model_string, model_choices

        pane = message.pane
        current = pane.thread_model
        choices = model_choices(self.config.models, pane.agent_model, current)
        picker = ModelPicker(f"{pane.feed.resource_id}/{pane.feed.thread_id}", current,
                             choices, check_model_string)
        choice = await self.push_screen_wait(picker)
        if choice is not None and choice != current:
            pane.choose_model(choice)

    # -- abort ---------------------------------------------------------------------------------

    @work(group="confirm")
    async def on_thread_pane_abort_requested(self, message: ThreadPane.AbortRequested) -> None:
        from tui_agent.app.screens.confirm import ConfirmScreen

        pane = message.pane
        question = f"Abort the live run on {pane.key}? Its partial answer is kept."
        if await self.push_screen_wait(ConfirmScreen(question, yes="Abort")):
            pane.abort_now()

    # -- help and command palette --------------------------------------------------------------

    def action_toggle_help(self) -> None:
        """Every binding, with its key and its keymap id (``screens/help.py``)."""
        from tui_agent.app.screens.help import HelpScreen, help_text

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(HelpScreen(help_text(binding_scopes(), self._key_of)))

    def _key_of(self, binding: Binding) -> str:
        """A binding's keys now (after the keymap), as the key bar shows them."""
        from dataclasses import replace

        keys = self._keymap_in_use.get(binding.id or "", binding.key)
        return ", ".join(self.get_key_display(replace(binding, key=key.strip()))
                         for key in keys.split(","))

    def get_system_commands(self, screen: Screen[Any]) -> Any:
        yield from super().get_system_commands(screen)
        yield from palette_commands(self)

    def toggle_inbox_scope(self) -> None:
        """Only the notifications of the threads in panes, or of every thread."""
        inbox = self._inbox()
        if inbox is None:
            return
        if self.plan.inbox == "hidden":
            self.action_toggle_inbox()
        inbox.action_toggle_scope()

    # -- signals by hand ------------------------------------------------------------------------

    @work(group="send-by-hand", exit_on_error=False)
    async def send_by_hand(self, kind: str) -> None:
        """The form, then ``send_notification_signal`` / ``send_state_signal`` into the focused
        pane's thread; the policy's decision (or the lane's version) shows in the pane."""
        from tui_agent.app.bridge import TuiAgentError
        from tui_agent.app.screens.send_signal import SendSignalScreen

        pane = self.focused_pane()
        if pane is None:
            return
        form = await self.push_screen_wait(SendSignalScreen(kind, pane.key))
        if form is None:
            return
        try:
            pane.show_notice(await self._send_form(form, pane))
        except TuiAgentError as error:
            pane.show_notice(f"✗ {error}", error=True)

    async def _send_form(self, form: Any, pane: ThreadPane) -> str:
        from tui_agent.app.bridge import send_form

        return await send_form(self.config.agent, form.kind, form.fields, pane.resource_id,
                               pane.thread_id)

    # -- background work -----------------------------------------------------------------------

    @work(group="model", exit_on_error=False)
    async def _warm_model(self) -> None:
        """Load the model off the UI: litellm's import (seconds), the local model's server."""
        from tui_agent.app.bridge import TuiAgentError, warm_model

        self.sub_title = f"loading {self.config.model_label}…"
        try:
            await warm_model(self.config.agent)
        except TuiAgentError as error:
            self.notify(str(error), title="model", severity="error", timeout=15)
            self.sub_title = "model failed to load"
            return
        freeze_late_imports()  # what loading imported (litellm: ~240k objects) is frozen
        self.sub_title = f"{self.config.model_label} ready"

    @work(group="demo", exit_on_error=False)
    async def _run_demo(self) -> None:
        import asyncio

        from tui_agent.app.bridge import run_demo

        self._demo_stop = asyncio.Event()
        await run_demo(self.config.agent, lambda text: self.notify(text, timeout=5),
                       self._demo_stop)

    async def action_quit(self) -> None:
        await self.shutdown()
        self.exit(0)

    async def shutdown(self) -> None:
        """Stop the demo feed and this process's runs (other processes' runs go on)."""
        from tui_agent.app.bridge import stop_local_runs

        if self._demo_stop is not None:
            self._demo_stop.set()
        if self._config is None:
            return
        await stop_local_runs(self._config.agent)
