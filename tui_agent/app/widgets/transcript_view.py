"""The scrolling list of a pane's entries, kept in step with its ``Transcript``.

- **Bounded**: at most ``MAX_ENTRIES`` entries are mounted, however long the session runs;
  older ones are pruned from the top and paged back in from memory when you scroll up.
- **Follow mode**: the view follows new output only while it is at the bottom. Scrolled up, it
  stays put and counts what arrived below ("↓ N new"); End or scrolling back down resumes.
- **Cheap restyles**: ``layout: stream`` and no structural pseudo-classes on the entries, so a
  focus change never restyles the whole transcript.
"""

from __future__ import annotations

from textual import events
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget

from tui_agent.app.transcript import Entry, Transcript
from tui_agent.app.widgets.assistant_message import AssistantMessage
from tui_agent.app.widgets.run_marker import RunMarker
from tui_agent.app.widgets.signal_line import SignalLine
from tui_agent.app.widgets.tool_call import ToolCall
from tui_agent.app.widgets.user_message import UserMessage

MAX_ENTRIES = 60  # mounted entries per pane (an answer is 3 widgets): ~≤ 200 widgets a pane
# ... and at most this much of their text: long answers weigh their rendered lines in memory
# (and in every full pass of the garbage collector), so a pane of long answers keeps ~2,000
# lines; older ones page back in from memory (benchmarks/bench_app_soak.py).
MAX_TEXT_CHARS = 100_000
WIDGETS = {"user": UserMessage, "assistant": AssistantMessage, "tool": ToolCall,
           "signal": SignalLine, "marker": RunMarker}


def widget_for(entry: Entry) -> Widget:
    widget = WIDGETS[entry.kind](entry)
    widget.id = f"entry-{entry.key}"
    return widget


class TranscriptView(VerticalScroll, can_focus=True):
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
    }
    """
    BLANK = True

    class NearTop(Message):
        """Scrolled to the top: the pane may page in older history."""

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

    # -- syncing -------------------------------------------------------------------------------

    async def sync(self) -> int:
        """Mount what the transcript added, refresh what changed, remove what it dropped.
        Returns how many old entries were pruned from the top (history can page them back)."""
        pruned = (self.transcript.prune_to(MAX_ENTRIES, MAX_TEXT_CHARS) if self.following
                  else 0)
        changes = self.transcript.take_changes(with_added=self.following)
        with self.app.batch_update():
            for entry in changes.removed:
                widget = self._widgets.pop(entry.key, None)
                if widget is not None:
                    await widget.remove()
            if changes.prepended:
                first = self.children[0] if self.children else None
                await self._mount(changes.prepended, before=first)
            if changes.added:
                await self._mount(changes.added)
            for entry in changes.changed:
                widget = self._widgets.get(entry.key)
                if widget is not None:
                    widget.refresh_entry()  # type: ignore[attr-defined]
        if self.following:
            self._follow_after_refresh()
        else:  # an answer that grew below the view is new output too
            self._grown_below.update(entry.key for entry in changes.changed)
        self.unseen = self.transcript.waiting + len(self._grown_below)
        return pruned

    async def _mount(self, entries: list[Entry], before: Widget | None = None) -> None:
        widgets = [widget_for(e) for e in entries]
        self._widgets.update({e.key: w for e, w in zip(entries, widgets, strict=True)})
        await self.mount_all(widgets, before=before)

    def widget_count(self) -> int:
        return len(self._widgets)

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
