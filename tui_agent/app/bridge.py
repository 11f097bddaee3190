"""The one module that speaks to both the agent core and Textual.

A ``ThreadFeed`` is one pane's connection to one thread: it subscribes (``subscribe_to_thread``),
loads the newest history from memory, folds both into the pane's ``Transcript`` and posts
``ThreadFeed.Changed`` to the pane (at most one waiting at a time: a burst of events costs the
UI one message). Sending, aborting, detaching and paging older history go through it too, so
widgets never call the core themselves. Everything here runs on the app's event loop without
blocking it: store I/O is aiosqlite's thread, the model's work is the core's tasks. Nothing
here polls on a timer: the signals waiting for a live run are re-read only after a commit (the
store's one shared poller, ``Memory.changes``), at most once per ``WAITING_GAP_S``
(tests/app/test_pane_controls.py, tests/app/test_change_wakes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from tui_agent.app.thread_model import run_cost
from tui_agent.app.transcript import Transcript
from tui_agent.errors import ConfigError, TuiAgentError
from tui_agent.events import DATA_SIGNAL, DATA_USER_MESSAGE, END_TYPES, START, STEP_FINISH
from tui_agent.signals.data import signal_text

__all__ = ["ConfigError", "SendRequest", "ThreadFeed", "TuiAgentError", "demo_thread",
           "run_cost", "run_demo", "send_form", "signal_text", "stop_local_runs", "thread_listing",
           "warm_model"]

FIRST_PAGE = 20  # messages mounted when a pane opens: a screenful, so a pane paints fast
HISTORY_PAGE = 50  # messages paged in per step scrolled back (or until the view can scroll)
# Finding where a live-only transcript starts in the stored history: so many pages read back
# at most, matching the first so many entries (the oldest are what a prune left).
CURSOR_PAGES = 8
CURSOR_ENTRIES = 4
FIND_LIMIT = 1000  # matches ctrl+f counts and steps through in a thread (the count says 1000+)
PICKER_SEARCH_LIMIT = 500  # messages the thread picker reads to rank threads by their text
WAITING_GAP_S = 0.5  # the least time between two reads of the signals waiting for a live run
URGENT_TYPES = END_TYPES | {STEP_FINISH}  # an answer's end: shown at once, not at the next tick
STOP_WAIT_S = 5.0  # how long quitting waits for each of this process's aborted runs to end


@dataclass
class SendRequest:
    """What the composer asks for: a user message or a typed signal, now or queued."""

    text: str
    attributes: dict[str, str]
    queued: bool = False
    signal_type: str = "user"  # user | reactive | notification | custom (tag_name given)
    tag_name: str | None = None


class ThreadFeed:
    """A live view of one thread for one pane. ``start()`` once; ``close()`` at the end."""

    class Changed(Message):
        """The transcript or the run state changed: the pane should sync its widgets
        (``urgent``: an answer or a run ended, its last words should show now, not at the
        pane's next tick)."""

        def __init__(self, feed: ThreadFeed, *, urgent: bool = False) -> None:
            super().__init__()
            self.feed = feed
            self.urgent = urgent

    class Failed(Message):
        """The feed stopped on an error (one line, for the pane or a toast)."""

        def __init__(self, feed: ThreadFeed, error: str) -> None:
            super().__init__()
            self.feed = feed
            self.error = error

    class StateChanged(Message):
        """A state lane of the thread changed (its ``data-signal`` of type state was read from
        the thread's stream: sent by this process or another). Posted once per such event."""

        def __init__(self, feed: ThreadFeed, lane_id: str) -> None:
            super().__init__()
            self.feed = feed
            self.lane_id = lane_id

    def __init__(self, agent: Any, resource_id: str, thread_id: str, target: MessagePump) -> None:
        self.agent = agent
        self.resource_id = resource_id
        self.thread_id = thread_id
        self.transcript = Transcript(agent_id=str(agent.id))
        self.attached = False
        self.has_older = False
        self.title: str | None = None
        self.model: str | None = None  # the model kept with the thread (None: the agent's)
        self.thread_tokens = 0
        self.thread_usage = (0, 0)  # input and output tokens of the thread's ended runs
        self.waiting: list[dict[str, Any]] = []  # accepted signals no run has taken yet
        self.state_events = 0  # state-lane changes read from the stream since start()
        self._target = target
        self._sub: Any = None
        self._pump: asyncio.Task[None] | None = None
        self._waiting: asyncio.Task[None] | None = None
        # Set by a commit anywhere, and by each event read (a run this pane just learnt of).
        self._waiting_wake = asyncio.Event()
        self._posted = False
        self._paging = asyncio.Lock()  # one page at a time: each starts where the last ended

    # -- life cycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Subscribe, then load history (a run live now is replayed by the stream from its
        start, and replaces what history had of it: nothing is shown twice or missed)."""
        memory = self.agent.memory
        self._sub = await self.agent.subscribe_to_thread(
            resource_id=self.resource_id, thread_id=self.thread_id
        )
        await self._read_title()
        records = await memory.list_messages(self.thread_id, limit=FIRST_PAGE)
        self.has_older = len(records) == FIRST_PAGE
        self.thread_usage = await _thread_usage(memory, self.thread_id)
        self.thread_tokens = sum(self.thread_usage)
        self.transcript.load_history(records)
        self.attached = True
        loop = asyncio.get_running_loop()
        self._pump = loop.create_task(self._read(), name="pane feed")
        self._waiting = loop.create_task(self._follow_waiting(), name="pane waiting signals")
        self._changed()

    async def _read_title(self) -> None:
        """The thread's title and its chosen model (both may change from any terminal)."""
        thread = await self.agent.memory.get_thread(self.thread_id)
        self.title = thread.title if thread else None
        model = thread.metadata.get("model") if thread else None
        self.model = model if isinstance(model, str) and model else None

    async def _read(self) -> None:
        try:
            async for event in self._sub.stream:
                self.transcript.apply(event)
                self._taken(event)
                self._waiting_wake.set()
                self._state_event(event)
                if event.get("type") == START:
                    await self._read_title()  # created, or its model chosen, since
                if event.get("type") in END_TYPES:
                    usage = (event.get("payload") or {}).get("usage") or {}
                    taken = int(usage.get("input_tokens") or 0), int(
                        usage.get("output_tokens") or 0)
                    self.thread_usage = (self.thread_usage[0] + taken[0],
                                         self.thread_usage[1] + taken[1])
                    self.thread_tokens += sum(taken)
                self._changed(urgent=event.get("type") in URGENT_TYPES)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the store went away, a corrupt row: say so, once
            self._target.post_message(self.Failed(self, _one_line(error)))
        finally:
            self.attached = False
            if self._waiting is not None:
                self._waiting.cancel()  # detached: nothing to follow (and the poller may stop)
            self._changed()

    async def _follow_waiting(self) -> None:
        """Signals sent into a live run wait for its next step boundary (seconds, with a slow
        model): show them as waiting until the run takes them, whoever sent them. Only a commit
        (here or in another process: the store's shared poller) can change them, so they are
        read after one, while a run is live or some wait, at most once per ``WAITING_GAP_S``."""
        self._waiting_wake.set()  # those waiting already
        with self.agent.memory.changes.watch(self._waiting_wake) as changes:
            while self.attached:
                await changes.wait()
                if self.active_run_id() is not None or self.waiting:
                    await self.refresh_waiting()
                    await asyncio.sleep(WAITING_GAP_S)

    def _state_event(self, event: dict[str, Any]) -> None:
        """A state lane changed: tell the pane (its state panel re-reads the lanes)."""
        payload = event.get("payload") or {}
        if event.get("type") == DATA_SIGNAL and payload.get("type") == "state":
            self.state_events += 1
            lane_id = str((payload.get("attributes") or {}).get("id") or "")
            self._target.post_message(self.StateChanged(self, lane_id))

    def _taken(self, event: dict[str, Any]) -> None:
        """A waiting signal's echo: a run took it, so it no longer waits."""
        if self.waiting and event.get("type") in (DATA_USER_MESSAGE, DATA_SIGNAL):
            taken = (event.get("payload") or {}).get("id")
            self.waiting = [w for w in self.waiting if w["id"] != taken]

    async def refresh_waiting(self) -> None:
        waiting = await self.agent.memory.waiting_signals(self.thread_id)
        if [w["id"] for w in waiting] != [w["id"] for w in self.waiting]:
            self.waiting = waiting
            self._changed()

    def _changed(self, *, urgent: bool = False) -> None:
        """Tell the pane, once until it takes the changes — or at once when ``urgent``."""
        if urgent or not self._posted:
            self._posted = True
            self._target.post_message(self.Changed(self, urgent=urgent))

    @property
    def changes_waiting(self) -> bool:
        """A change was posted to the pane and not yet taken."""
        return self._posted

    @property
    def behind(self) -> bool:
        """Events are known to wait to be read from the thread's stream (a run that ended
        before the feed read it is not live, yet not shown either)."""
        return self._sub is not None and self._sub.behind

    def acknowledge(self) -> None:
        """The pane has taken the changes; the next change posts again."""
        self._posted = False

    def detach(self) -> None:
        """Stop watching (the thread's run goes on)."""
        if self._sub is not None:
            self._sub.unsubscribe()

    async def close(self) -> None:
        self.detach()
        for task in (self._pump, self._waiting):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    # -- what the pane shows -------------------------------------------------------------------

    def active_run_id(self) -> str | None:
        return self._sub.active_run_id() if self._sub is not None and self.attached else None

    # -- controls ------------------------------------------------------------------------------

    def abort(self) -> bool:
        """Abort the thread's live run, in this process or another. True if there was one."""
        return bool(self._sub is not None and self._sub.abort())

    async def send(self, request: SendRequest) -> str:
        """Send; returns the route taken, e.g. ``deliver → run 1a2b`` (raises TuiAgentError)."""
        target = {"resource_id": self.resource_id, "thread_id": self.thread_id}
        await self.agent.memory.create_thread(self.thread_id, resource_id=self.resource_id)
        if request.signal_type == "user":
            message: Any = (
                {"contents": request.text, "attributes": request.attributes}
                if request.attributes else request.text
            )
            send = self.agent.queue_message if request.queued else self.agent.send_message
            receipt = send(message, **target)
        else:
            signal: dict[str, Any] = {"type": request.signal_type, "contents": request.text,
                                      "attributes": request.attributes}
            if request.tag_name:
                signal["tag_name"] = request.tag_name
            receipt = self.agent.send_signal(signal, **target)
        route = route_label(await receipt.accepted, queued=request.queued)
        await self.refresh_waiting()
        return route

    async def retry(self) -> str:
        """Answer the thread's last message again (``Agent.retry``; the old answer stays,
        marked superseded). The new run's id; ``TuiAgentError`` if the thread is busy."""
        output = await self.agent.retry(resource_id=self.resource_id, thread_id=self.thread_id)
        return str(output.run_id)

    async def resend_edited(self, signal_id: str | None, message_id: str | None,
                            request: SendRequest) -> str:
        """Supersede the thread's last message (the one shown with ``signal_id`` or
        ``message_id``) and its answer, then send ``request`` in its place. Refused, with
        nothing changed, if a run is live or another message came after it meanwhile."""
        if self.active_run_id() is not None:
            raise ConfigError("a run is live: abort it first (escape), then edit")
        exchange = await self.agent.memory.last_exchange(self.thread_id)
        user = exchange.user
        if user is None or not (user.id == message_id or (
                signal_id is not None and user.metadata.get("signal_id") == signal_id)):
            raise ConfigError("a newer message came in meanwhile: nothing was edited")
        ids = [user.id, *(m.id for m in exchange.answer)]
        await self.agent.memory.supersede(self.thread_id, ids, by="edit")
        return await self.send(request)

    async def set_model(self, model: str | None) -> None:
        """Keep ``model`` with the thread (None: the agent's own), for every terminal."""
        await self.agent.memory.set_thread_model(self.thread_id, model,
                                                 resource_id=self.resource_id)
        self.model = model

    async def state_lanes(self) -> list[Any]:
        """The thread's state lanes as stored now (``id, version, mode, value, updated_at``)."""
        return list(await self.agent.memory.list_state_lanes(self.thread_id))

    async def state_lane_history(self, lane_id: str, limit: int) -> list[Any]:
        """The lane's newest ``limit`` versions, newest first (each with its ``delta``)."""
        history = self.agent.memory.state_lane_history
        return list(await history(self.thread_id, lane_id, limit=limit))

    async def search(self, query: str) -> list[Any]:
        """The thread's messages holding every word of ``query`` (``Memory.search_messages``
        over its whole history, not only what is on screen), oldest first, at most
        ``FIND_LIMIT``."""
        hits = await self.agent.memory.search_messages(
            query, thread_id=self.thread_id, limit=FIND_LIMIT)
        return list(reversed(hits))

    async def export_text(self, fmt: str) -> str:
        """The thread whole as ``fmt`` (json or md), as ``tui-agent export`` writes it."""
        from tui_agent.export import export_text

        return await export_text(self.agent.memory.store, self.thread_id, fmt)

    async def load_older(self) -> int:
        """Page the messages older than the oldest shown into the top. Returns how many.
        Callers (scrolling to the top, a view too short to scroll, the inbox's reveal) may ask
        at once: the pages are taken one after another, so none is prepended twice."""
        async with self._paging:
            if not self.has_older or not self.transcript.entries:
                return 0
            before = self.transcript.first_message_id() or await self._stored_id_of_first()
            if before is None:
                self.has_older = False  # nothing shown was stored: there is nothing older
                return 0
            records = await self.agent.memory.list_messages(
                self.thread_id, limit=HISTORY_PAGE, before=before
            )
            self.has_older = len(records) == HISTORY_PAGE
            records = self._not_shown(records)
            self.transcript.load_history(records, prepend=True)
            return len(records)

    def _not_shown(self, records: list[Any]) -> list[Any]:
        """``records`` less those the oldest entries shown live were saved as (their cursor
        may be a later entry's record, when theirs was not found)."""
        from tui_agent.app.transcript import came_from

        live = [entry for entry in self.transcript.entries[:CURSOR_ENTRIES]
                if entry.message_id is None]
        return [record for record in records
                if not any(came_from(entry, record) for entry in live)]

    async def _stored_id_of_first(self) -> str | None:
        """The id of the stored message the oldest entry was saved as, for an entry shown
        live (it came from the stream, without one): the newest messages are read back, a
        page at a time, until one matches (``came_from``). Entries no record matches (a
        run's marker) are passed over."""
        from tui_agent.app.transcript import came_from

        before: str | None = None
        for _ in range(CURSOR_PAGES):
            records = await self.agent.memory.list_messages(
                self.thread_id, limit=HISTORY_PAGE, before=before)
            for entry in self.transcript.entries[:CURSOR_ENTRIES]:
                matches = [record for record in records if came_from(entry, record)]
                if matches:
                    return str(matches[0].id)
            if len(records) < HISTORY_PAGE:
                return None
            before = records[0].id
        return None


def route_label(decision: dict[str, Any], *, queued: bool = False) -> str:
    action = decision.get("action", "?")
    run_id = decision.get("run_id")
    short = f" run {str(run_id)[:8]}" if run_id else ""
    if action == "deliver" and queued:
        return f"queued → after{short}"
    return f"{action} →{short}" if short else str(action)


async def _thread_usage(memory: Any, thread_id: str) -> tuple[int, int]:
    usage = getattr(memory, "thread_usage", None)
    if usage is None:
        return 0, 0
    totals = await usage(thread_id)
    return int(totals.get("input_tokens", 0)), int(totals.get("output_tokens", 0))


def _one_line(error: BaseException) -> str:
    text = str(error) if isinstance(error, TuiAgentError) else f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:300]


# -- the app's own calls into the core (app.py's actions; the panes' go through ThreadFeed) ----


async def thread_listing(agent: Any) -> list[tuple[Any, tuple[int, bool]]]:
    """Every thread of the agent's store, with its activity (``Memory.thread_activity``:
    messages, a live run) or ``(0, False)``."""
    threads = await agent.memory.list_threads()
    activity = await agent.memory.thread_activity()
    return [(thread, activity.get(thread.id, (0, False))) for thread in threads]


async def search_threads(agent: Any, query: str) -> dict[str, list[Any]]:
    """``{thread id: its messages holding every word of query, newest first}`` over every
    thread of the store (the thread picker's search), at most ``PICKER_SEARCH_LIMIT`` in all."""
    found: dict[str, list[Any]] = {}
    for hit in await agent.memory.search_messages(query, limit=PICKER_SEARCH_LIMIT):
        found.setdefault(hit.thread_id, []).append(hit)
    return found


async def send_form(agent: Any, kind: str, fields: dict[str, Any], resource_id: str,
                    thread_id: str) -> str:
    """Send a hand-made notification or state signal into the thread; the policy's decision
    (or the lane's new version) as one line for the pane."""
    from tui_agent.state.lanes import state_update

    target = {"resource_id": resource_id, "thread_id": thread_id}
    await agent.memory.create_thread(thread_id, resource_id=resource_id)
    if kind == "notification":
        outcome = await agent.send_notification_signal(fields, **target)
        decision = outcome["decision"]
        return f"✉ {decision['action']}: {decision.get('reason', '')}"
    signal = state_update(fields["lane"], fields["value"], delta=fields["delta"])
    outcome = await agent.send_state_signal(signal, if_idle={"behavior": "persist"}, **target)
    if isinstance(outcome, dict) and outcome.get("skipped"):
        return f"⟳ {fields['lane']} unchanged"
    lane = await agent.memory.get_state_lane(thread_id, fields["lane"])
    return f"⟳ {fields['lane']} → v{lane.version if lane else '?'}"


async def warm_model(agent: Any) -> None:
    """Load the agent's model now (litellm's import, the local model's server), off the loop;
    its setup error is raised as a ``TuiAgentError``."""
    from tui_agent.startup.agents import check_model

    await check_model(agent, warm=True)


def demo_thread() -> tuple[str, str]:
    """(resource, thread) of the live demo's thread, the one ``tui-agent --demo`` opens."""
    from tui_agent.demo import DEMO_RESOURCE, DEMO_THREAD

    return DEMO_RESOURCE, DEMO_THREAD


async def run_demo(agent: Any, say: Any, stop: asyncio.Event) -> None:
    """The live demo scenario on the agent's demo thread until ``stop`` is set."""
    from tui_agent.demo import DemoFeed

    await DemoFeed(agent, say=say).run(stop)


async def stop_local_runs(agent: Any) -> None:
    """Abort this process's runs and wait (``STOP_WAIT_S`` each) for them to end; other
    processes' runs go on. A run waiting for approval is set aside instead: its calls stay
    pending, for any terminal (this app started again, too) to answer and go on with."""
    await agent.runtime.set_aside_parked()
    for output in agent.local_runs():
        output.abort()
    for output in agent.local_runs():
        with contextlib.suppress(Exception):
            await asyncio.wait_for(output.result(), STOP_WAIT_S)


def redact_secrets(text: str) -> str:
    """``text`` with every credential this process could hold replaced by ``***`` (for a
    crash report: ``tui_agent.app.crash``)."""
    from tui_agent.models.redaction import call_secrets, redact

    return redact(text, call_secrets({}))
