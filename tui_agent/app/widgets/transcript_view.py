"""The scrolling list of a pane's entries, kept in step with its ``Transcript``.

- **Bounded**: at most ``MAX_ENTRIES`` entries are mounted, however long the session runs;
  older ones are pruned from the top and paged back in from memory when you scroll up. A pane
  that is not focused (``sync(compact=True)``) keeps fewer: its newest ``COMPACT_SCREENS``
  screenfuls of lines, so the app's layouts (each arranges every mounted widget of every pane)
  weigh mostly the pane being read (tests/app/test_pane_controls.py).
- **Follow mode**: the view follows new output only while it is at the bottom. Scrolled up, it
  stays put and counts what arrived below ("↓ N new"); End or scrolling back down resumes.
- **Painted lines let go**: Textual keeps every line it painted of a widget (a ``Strip`` with
  its caches) until that widget is refreshed; an entry that scrolled out of view is refreshed
  once, so a long session keeps painted only what is on screen (tests/app/test_pane_controls.py).
- **Signals in runs**: consecutive signal lines are drawn by one ``SignalRun``; the line of one
  that is selected, found or revealed gets a widget of its own (``entry_widget``).
- **Cheap restyles**: ``layout: stream`` and no structural pseudo-classes on the entries, so a
  focus change never restyles the whole transcript.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import AwaitMount, Widget

from tui_agent.app.gc_policy import SWEEPER
from tui_agent.app.transcript import Entry, Transcript
from tui_agent.app.widgets.assistant_message import AssistantMessage
from tui_agent.app.widgets.layout_echo import NoLayoutEcho
from tui_agent.app.widgets.run_marker import RunMarker
from tui_agent.app.widgets.signal_line import SignalLine
from tui_agent.app.widgets.signal_run import SignalRun
from tui_agent.app.widgets.tool_call import ToolCall
from tui_agent.app.widgets.user_message import UserMessage

MAX_ENTRIES = 60  # mounted entries per pane (an answer is 3 widgets): ~≤ 200 widgets a pane
# ... and at most this much of their text: long answers weigh their rendered lines in memory
# (and in every full pass of the garbage collector), so a pane of long answers keeps ~2,000
# lines; older ones page back in from memory (benchmarks/bench_app_soak.py).
MAX_TEXT_CHARS = 100_000
# A pane that is not focused keeps mounted its newest entries that fill this many screenfuls
# (at least COMPACT_MIN_ENTRIES): what it shows is the same, its scrollback pages in from memory.
COMPACT_SCREENS = 2
COMPACT_MIN_ENTRIES = 8
SELECTABLE = ("user", "assistant", "tool", "signal")  # what up/down select
CLICK_SELECTS = ("user", "assistant", "signal")
WIDGETS = {"user": UserMessage, "assistant": AssistantMessage, "tool": ToolCall,
           "signal": SignalLine, "marker": RunMarker}


def widget_for(entry: Entry) -> Widget:
    widget = WIDGETS[entry.kind](entry)
    widget.id = f"entry-{entry.key}"
    return widget


class TranscriptView(NoLayoutEcho, VerticalScroll, can_focus=True):
    DEFAULT_CSS = """
    TranscriptView {
        layout: stream;
        height: 1fr;
        scrollbar-size-vertical: 1;
        /* The scrollbar's column is kept whether or not it shows: a width that changed with the
           content's height would re-wrap the answers, change their height, and could flip the
           scrollbar on and off for ever (an answer alternating between raw and rendered). */
        scrollbar-gutter: stable;
        background: $background;
        &:focus-within > .-selected { background: $accent 18%; }
    }
    """
    BLANK = True
    # Live while the transcript has the focus (Tab, a click on a message, ctrl+up): they act
    # on the selected message (``tui_agent/app/message_actions.py``).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "select(-1)", "Prev", show=False, id="transcript.previous"),
        Binding("down,j", "select(1)", "Next", show=False, id="transcript.next"),
        Binding("c", "act('copy')", "Copy", id="transcript.copy"),
        Binding("b", "act('copy_code')", "Code", id="transcript.copy_code"),
        Binding("q,greater_than_sign", "act('quote')", "Quote", id="transcript.quote"),
        Binding("r", "act('retry')", "Retry", id="transcript.retry"),
        Binding("e", "act('edit')", "Edit", id="transcript.edit"),
    ]

    class NearTop(Message):
        """Scrolled to the top: the pane may page in older history."""

    class Act(Message):
        """An action on the selected message (copy, copy_code, quote, retry, edit)."""

        def __init__(self, entry: Entry, action: str) -> None:
            super().__init__()
            self.entry = entry
            self.action = action

    class FollowChanged(Message):
        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following

    def __init__(self, transcript: Transcript, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.transcript = transcript
        self.following = True
        self.unseen = 0  # entries added (or grown) below while scrolled up
        self._grown_below: set[str] = set()  # entries that changed while scrolled up
        self._widgets: dict[str, Widget] = {}
        self._in_view: set[Widget] = set()  # widgets in view at the last sync (maybe painted)
        self.selected: str | None = None  # the selected entry's key

    # -- syncing -------------------------------------------------------------------------------

    async def show_transcript(self, transcript: Transcript) -> None:
        """Show ``transcript`` from scratch (a re-attached pane's fresh feed): the old entries'
        widgets go, following resumes, and this view stays mounted throughout, so a sync asked
        for at any moment of the swap finds it (tests/app/test_pane_controls.py)."""
        self.transcript = transcript
        old = list(self.children)
        self._widgets = {}
        self._in_view = set()
        self._grown_below.clear()
        self.selected = None
        self.unseen = 0
        self.following = True
        if old:
            await self.remove_children(old)
            SWEEPER.released()  # the old entries' widgets are cyclic garbage

    async def sync(self, *, compact: bool = False) -> int:
        """Mount what the transcript added, refresh what changed, remove what it dropped.
        ``compact`` (a pane not focused): keep only the entries of the last few screenfuls.
        Returns how many old entries were pruned from the top (history can page them back)."""
        keep = self._compact_keep() if compact else MAX_ENTRIES
        pruned = (self.transcript.prune_to(keep, MAX_TEXT_CHARS) if self.following else 0)
        changes = self.transcript.take_changes(with_added=self.following)
        # The DOM changes are made in one batch (no frame shows half of them), but their
        # completion (children composed, pruned nodes gone) is awaited after it: a batch held
        # across those awaits stopped every frame of the app until the mount was done
        # (bench_app_hours: frames held p99 13 ms, up to 95 ms; now p99 2 ms).
        pending: list[Awaitable[object]] = []
        removed = False
        with self.app.batch_update():
            for entry in changes.removed:
                widget = self._widgets.pop(entry.key, None)
                if isinstance(widget, SignalRun) and len(widget.entries) > 1:
                    widget.keep([e for e in widget.entries if e is not entry])
                elif widget is not None:
                    pending.append(widget.remove())
                    removed = True
                if entry.key == self.selected:
                    self.selected = None
            if changes.prepended:
                first = self.children[0] if self.children else None
                pending.extend(self._mount(changes.prepended, before=first))
            if changes.added:
                pending.extend(self._mount(changes.added))
            refreshed: set[Widget] = set()
            for entry in changes.changed:
                widget = self._widgets.get(entry.key)
                if widget is not None and widget not in refreshed:
                    refreshed.add(widget)
                    widget.refresh_entry()  # type: ignore[attr-defined]
        for done in pending:
            await done
        if removed:
            SWEEPER.released()  # removed widgets are cyclic garbage: one sweep frees them all
        self._release_scrolled_out()
        if self.following:
            self._follow_after_refresh()
        else:  # an answer that grew below the view is new output too
            self._grown_below.update(entry.key for entry in changes.changed)
        self.unseen = self.transcript.waiting + len(self._grown_below)
        return pruned

    def _compact_keep(self) -> int:
        """How many of the newest entries fill ``COMPACT_SCREENS`` screenfuls (an entry not
        laid out yet counts one line, so the estimate keeps more, never fewer)."""
        budget = COMPACT_SCREENS * max(1, self.scrollable_content_region.height)
        lines = count = 0
        for entry in reversed(self.transcript.entries):
            widget = self._widgets.get(entry.key)
            lines += max(1, widget.outer_size.height + widget.styles.margin.top) if widget else 1
            count += 1
            if lines >= budget and count >= COMPACT_MIN_ENTRIES:
                break
        return min(MAX_ENTRIES, count)

    def _release_scrolled_out(self) -> None:
        """Refresh (which drops Textual's painted lines of) each entry that left the view since
        the last sync; entries never in view were never painted and cost nothing."""
        top = self.scroll_offset.y
        bottom = top + self.scrollable_content_region.height
        in_view = set()
        for widget in self.children:
            region = widget.virtual_region
            if region.y < bottom and region.bottom > top:
                in_view.add(widget)
        for widget in self._in_view - in_view:
            if widget.parent is self:
                for node in widget.walk_children(Widget, with_self=True):
                    node.refresh()
        self._in_view = in_view

    def _mount(self, entries: list[Entry], before: Widget | None = None) -> list[AwaitMount]:
        """Mount ``entries`` (at the end, or before ``before``); consecutive signals share
        one ``SignalRun``, and signals added at the end join the run that ends the view.
        They are in the DOM at once; the mount completes when what is returned is awaited."""
        widgets: list[Widget] = []
        last = self.children[-1] if before is None and self.children else None
        runs: dict[SignalRun, list[Entry]] = {}
        for entry in entries:
            if entry.kind != "signal":
                widget = widget_for(entry)
                widgets.append(widget)
            else:
                tail = widgets[-1] if widgets else last
                if isinstance(tail, SignalRun) and (tail.entries or tail in runs):
                    widget = tail
                else:
                    widget = SignalRun([])
                    widgets.append(widget)
                runs.setdefault(widget, []).append(entry)
            self._widgets[entry.key] = widget
        for run, members in runs.items():
            run.extend(members)
        return [self.mount_all(widgets, before=before)] if widgets else []

    def widget_count(self) -> int:
        """How many entries are mounted (a run of signals counts each of its lines)."""
        return len(self._widgets)

    def entry_widget(self, key: str) -> Widget | None:
        """The widget of the entry ``key`` alone (None: not mounted): a signal drawn in a run
        is split out of it into a ``SignalLine`` of its own (id ``entry-<key>``), so it can be
        selected, tinted or scrolled to. The new widget is mounted by the next refresh."""
        widget = self._widgets.get(key)
        if not isinstance(widget, SignalRun):
            return widget
        run = widget
        index = next(i for i, e in enumerate(run.entries) if e.key == key)
        before, entry, after = run.entries[:index], run.entries[index], run.entries[index + 1 :]
        line = widget_for(entry)
        self._widgets[key] = line
        if before:
            run.keep(before)
            self.mount(line, after=run)
            if after:
                tail = SignalRun(after)
                self._widgets.update({e.key: tail for e in after})
                self.mount(tail, after=line)
        else:
            self.mount(line, before=run)
            if after:
                run.keep(after)
            else:  # its lines go at once: no signal added meanwhile may join it
                run.remove()
        return line

    # -- selecting a message -------------------------------------------------------------------

    def selected_entry(self) -> Entry | None:
        widget = self._widgets.get(self.selected or "")
        return getattr(widget, "entry", None) if widget is not None else None

    def select(self, key: str | None) -> None:
        """Select the entry ``key`` (None: none), shown in view."""
        old = self._widgets.get(self.selected or "")
        if old is not None:
            old.remove_class("-selected")
        split = isinstance(self._widgets.get(key or ""), SignalRun)
        widget = self.entry_widget(key) if key else None
        self.selected = key if widget is not None else None
        if widget is not None:
            widget.add_class("-selected")
            if split:  # mounted by the next refresh: scrolled to once it is laid out
                self.call_after_refresh(self._scroll_to_selected, widget)
            else:
                self._scroll_to_selected(widget)

    def _scroll_to_selected(self, widget: Widget) -> None:
        if widget.parent is self:
            self.scroll_to_widget(widget, animate=False, top=widget.outer_size.height
                                  > self.scrollable_content_region.height)

    def select_last(self) -> None:
        """Select the newest message (the one a fresh look at the transcript is about)."""
        keys = [e.key for e in self.transcript.entries if e.key in self._widgets
                and e.kind in SELECTABLE]
        if keys:
            self.select(keys[-1])

    def action_select(self, step: int) -> None:
        keys = [e.key for e in self.transcript.entries if e.key in self._widgets
                and e.kind in SELECTABLE]
        if not keys:
            return
        if self.selected not in keys:
            self.select(keys[-1])
            return
        index = max(0, min(len(keys) - 1, keys.index(self.selected) + step))
        self.select(keys[index])

    def action_act(self, action: str) -> None:
        entry = self.selected_entry()
        if entry is None:  # the focused entry (a tool call), else the newest
            focused = getattr(self.app.focused, "entry", None)
            if focused is not None and focused.key in self._widgets:
                self.select(focused.key)
            else:
                self.select_last()
            entry = self.selected_entry()
        if entry is not None:
            self.post_message(self.Act(entry, action))

    def on_focus(self) -> None:
        if self.selected_entry() is None:
            self.select_last()

    def on_click(self, event: events.Click) -> None:
        """A click on a message selects it (and the transcript has the focus)."""
        widget = event.widget
        while widget is not None and widget.parent is not self:
            widget = widget.parent if isinstance(widget.parent, Widget) else None
        entry = getattr(widget, "entry", None)
        if isinstance(widget, SignalRun):
            entry = widget.entry_at(event.screen_y - widget.content_region.y)
        if entry is not None and entry.kind in CLICK_SELECTS:  # a tool call's click expands it
            self.select(entry.key)

    # -- follow mode ---------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        """The content grew or shrank (also between two syncs, when an answer's final render
        changes its height): a following view stays at the end."""
        if self.is_anchored and self.max_scroll_y == 0:
            self.anchor(False)  # anchored, content shorter than the view would sit at its bottom
        if self.following:
            self._follow_after_refresh()

    def _follow_after_refresh(self) -> None:
        """Scroll to the end once the new height is laid out — unless the user scrolled up in
        between (a scroll queued before theirs must not undo it)."""
        self.call_after_refresh(self._scroll_end_if_following)

    def _scroll_end_if_following(self) -> None:
        if not self.following:
            return
        if self.max_scroll_y > 0 and not self.is_anchored:
            # Anchored, the view is kept at its end within the layout that grows it (Textual's
            # compositor): new output is painted in one frame, not a frame later after a scroll.
            # Scrolling up releases the anchor; reaching the end again restores it.
            self.anchor()
        self.scroll_end(animate=False, immediate=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        at_bottom = new_value >= self.max_scroll_y - 1
        if at_bottom != self.following:
            self.following = at_bottom
            if at_bottom:
                self.unseen = 0
                self._grown_below.clear()
            self.post_message(self.FollowChanged(at_bottom))
        if new_value <= 0 and old_value > 0:
            self.post_message(self.NearTop())

    def follow(self) -> None:
        """Jump to the newest output and follow it again."""
        self.following = True
        self.unseen = 0
        self._grown_below.clear()
        self.scroll_end(animate=False)
        self.post_message(self.FollowChanged(True))
