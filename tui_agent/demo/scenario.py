"""The live demo of ``tui-agent --demo``: a scripted "release day" on one memory thread.

``DemoFeed(agent).run(stop)`` keeps a thread lively until ``stop`` is set, only through the
agent's public API: three people post (each message may wake the agent), a ``browser`` lane (and
now and then an ``editor`` lane) changes without waking the model, and notifications of mixed
priorities arrive from ci, github and slack (the delivery policy decides which wake the model).
Every interval is scaled by ``pace``; all randomness comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from tui_agent.errors import ConfigError, TuiAgentError
from tui_agent.state.lanes import content_key

DEMO_RESOURCE = "demo"
DEMO_THREAD = "demo"
DEMO_TITLE = "Demo: release day"

# Seconds at pace 1: (first, low, high); each next one comes uniform(low, high) after the last.
PERSON_EVERY_S = (1.5, 22.0, 28.0)
STATE_EVERY_S = (0.5, 6.0, 12.0)
NOTIFY_EVERY_S = (4.0, 8.0, 15.0)
RUN_GRACE_S = 20.0  # a person waits at most this long for the run the previous one woke
EDITOR_SHARE = 0.25  # of state changes that touch the editor lane instead of the browser
SNAPSHOT_SHARE = 0.3  # of lane changes sent as a snapshot instead of a delta

PEOPLE = {"Ana": "slack", "Devin": "github", "Mei": "terminal"}
SCRIPT: tuple[tuple[str, str], ...] = (
    ("Ana", "Good morning! Are we still shipping v2.4 today?"),
    ("Devin", "PR #42 with the login fix is ready. What should a reviewer check?"),
    ("Mei", "The build on main failed once. What should I look at first?"),
    ("Ana", "Can you write a one-line release note for the login fix?"),
    ("Devin", "Tests are green after a retry. Is that good enough?"),
    ("Mei", "What is a good name for the release branch?"),
    ("Ana", "Customers ask when the fix lands. What should I tell them?"),
    ("Devin", "I merged #42. What is left before we tag?"),
    ("Mei", "Tagged v2.4.0. How do I roll back if something breaks?"),
    ("Ana", "Give me three short bullet points for the announcement."),
    ("Devin", "Should a docs typo get its own 2.4.1 release?"),
    ("Mei", "Deploy finished. Thank the team in one sentence."),
)
PAGES: tuple[tuple[str, str], ...] = (
    ("PR #42 · login fix", "https://github.com/acme/app/pull/42"),
    ("CI · main", "https://ci.acme.dev/app/main"),
    ("Release checklist", "https://wiki.acme.dev/release/checklist"),
    ("v2.4 milestone", "https://github.com/acme/app/milestone/24"),
    ("Status page", "https://status.acme.dev"),
    ("#release · Slack", "https://acme.slack.com/archives/release"),
)
FILES = ("CHANGELOG.md", "app/login.py", "pyproject.toml")
# (weight, notification); "{n}" is filled with a running build/event number.
NOTIFICATIONS: tuple[tuple[int, dict[str, Any]], ...] = (
    (34, {"source": "slack", "kind": "mention", "priority": "low",
          "summary": "Ana mentioned you in #release", "coalesce_key": "slack:release"}),
    (14, {"source": "github", "kind": "comment", "priority": "low",
          "summary": "New comment on PR #42", "coalesce_key": "github:pr-42"}),
    (14, {"source": "ci", "kind": "build_passed", "priority": "low",
          "summary": "Build #{n} passed on main", "coalesce_key": "ci:main:passed",
          "payload": {"build": "{n}", "url": "https://ci.acme.dev/app/builds/{n}"}}),
    (18, {"source": "github", "kind": "review_requested", "priority": "medium",
          "summary": "Devin requested your review on PR #42", "dedupe_key": "review:42"}),
    (16, {"source": "ci", "kind": "build_failed", "priority": "high",
          "summary": "Build #{n} failed on main: test_login", "dedupe_key": "ci:main:failed",
          "payload": {"build": "{n}", "url": "https://ci.acme.dev/app/builds/{n}"}}),
    (4, {"source": "ci", "kind": "deploy_failed", "priority": "urgent",
         "summary": "Deploy #{n} to production failed", "dedupe_key": "ci:deploy"}),
)
_PERSIST = {"behavior": "persist"}  # a lane change is stored for the next run, wakes nobody

Step = Callable[[asyncio.Event], Awaitable[None]]


def _quiet(_line: str) -> None:
    """The default ``say``: notices go nowhere."""


async def _stopped(stop: asyncio.Event, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``stop``; True as soon as it is set."""
    if timeout <= 0 or stop.is_set():
        return stop.is_set()
    try:
        await asyncio.wait_for(stop.wait(), timeout=timeout)
    except TimeoutError:
        return False
    return True


def _fill(value: Any, n: int) -> Any:
    """``value`` with ``{n}`` in its strings (also nested in dicts) replaced by ``n``."""
    if isinstance(value, str):
        return value.replace("{n}", str(n))
    if isinstance(value, dict):
        return {key: _fill(item, n) for key, item in value.items()}
    return value


def _lane_signal(lane: str, value: dict[str, Any], patch: dict[str, Any] | None) -> dict[str, Any]:
    """A state signal: a snapshot of ``value`` when ``patch`` is None, else the delta ``patch``.
    Its cache key is a hash of the resulting value, so a change to the same value is skipped."""
    key = content_key(value)
    if patch is None:
        return {"id": lane, "mode": "snapshot", "value": value, "cache_key": key}
    return {"id": lane, "mode": "delta", "delta": patch, "cache_key": key}


class DemoFeed:
    """Feeds the demo thread (``resource_id``/``thread_id``) until ``run``'s ``stop`` is set.

    Guarantees: one task, no background work left after ``run`` returns; ``run`` returns within
    a few milliseconds of ``stop`` being set (plus the store write in flight, if any); a send
    that fails with a ``TuiAgentError`` is reported through ``say`` and the feed goes on; the
    same ``seed`` gives the same sequence of messages, lane changes and notifications.
    """

    def __init__(
        self,
        agent: Any,
        *,
        resource_id: str = DEMO_RESOURCE,
        thread_id: str = DEMO_THREAD,
        pace: float = 1.0,
        seed: int | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        if getattr(agent, "memory", None) is None:
            raise ConfigError("the demo feed needs an agent with memory (Agent(memory=...))")
        if pace <= 0:
            raise ConfigError(f"demo pace must be > 0, got {pace!r}")
        self._agent = agent
        self._target = {"resource_id": resource_id, "thread_id": thread_id}
        self._pace = pace
        self._rng = random.Random(seed)
        self._say = say or _quiet
        self._line = 0
        self._event = 100
        self._last_run: Any = None  # the output of the run the last person message woke
        self._browser: dict[str, Any] | None = None
        self._editor: dict[str, Any] | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Create the thread (title ``DEMO_TITLE``), then post person messages, lane changes
        and notifications, each on its own jittered schedule, until ``stop`` is set."""
        try:
            await self._agent.memory.create_thread(
                self._target["thread_id"], resource_id=self._target["resource_id"],
                title=DEMO_TITLE,
            )
        except TuiAgentError as exc:
            self._say(f"demo: cannot open the demo thread: {exc}")
            return
        loop = asyncio.get_running_loop()
        plan: dict[Step, tuple[float, float, float]] = {
            self._post_person: PERSON_EVERY_S,
            self._change_state: STATE_EVERY_S,
            self._notify: NOTIFY_EVERY_S,
        }
        due = {step: loop.time() + first * self._pace for step, (first, _, _) in plan.items()}
        while not stop.is_set():
            step = min(due, key=due.__getitem__)
            if await _stopped(stop, due[step] - loop.time()):
                return
            await self._attempt(step, stop)
            _, low, high = plan[step]
            due[step] = loop.time() + self._rng.uniform(low, high) * self._pace

    async def _attempt(self, step: Step, stop: asyncio.Event) -> None:
        """Run one step; a ``TuiAgentError`` becomes a notice, never an exception."""
        try:
            await step(stop)
        except TuiAgentError as exc:
            self._say(f"demo: {step.__name__.strip('_').replace('_', ' ')} failed: {exc}")

    async def _post_person(self, stop: asyncio.Event) -> None:
        """The next scripted line, once the run the previous line woke has ended (or waited
        ``RUN_GRACE_S`` × pace for: then it is delivered into that run)."""
        if await self._run_ended(stop):
            return
        name, text = SCRIPT[self._line % len(SCRIPT)]
        self._line += 1
        message = {"contents": text, "attributes": {"name": name, "from": PEOPLE[name]}}
        accepted = await self._agent.send_message(message, **self._target).accepted
        self._last_run = accepted.get("output")  # set only when this process woke a run

    async def _run_ended(self, stop: asyncio.Event) -> bool:
        """Wait (bounded) for the last woken run to end; True if ``stop`` was set meanwhile."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RUN_GRACE_S * self._pace
        poll = max(0.01, 0.5 * self._pace)
        while self._last_run is not None and not self._last_run.done():
            if loop.time() >= deadline:
                return False
            if await _stopped(stop, poll):
                return True
        return False

    async def _change_state(self, _stop: asyncio.Event) -> None:
        """Change the browser lane (or, now and then, the editor lane) without waking anyone."""
        if self._browser is not None and self._rng.random() < EDITOR_SHARE:
            signal = self._editor_change()
        else:
            signal = self._browser_change()
        await self._agent.send_state_signal(
            signal, **self._target, if_active=_PERSIST, if_idle=_PERSIST
        )

    def _browser_change(self) -> dict[str, Any]:
        """Switch to (and maybe open) a page: tabs, active url and title."""
        title, url = self._rng.choice(PAGES)
        old = self._browser
        tabs = list(old["tabs"]) if old else [PAGES[0][1]]
        if url not in tabs:
            tabs = [*tabs[-3:], url]  # at most four tabs open
        patch: dict[str, Any] = {"active": url, "title": title}
        if old is None or tabs != old["tabs"]:
            patch["tabs"] = tabs
        self._browser = {"tabs": tabs, "active": url, "title": title}
        snapshot = old is None or self._rng.random() < SNAPSHOT_SHARE
        return _lane_signal("browser", self._browser, None if snapshot else patch)

    def _editor_change(self) -> dict[str, Any]:
        """Move the cursor, save, or (as a snapshot) open another file."""
        old = self._editor
        if old is None or self._rng.random() < SNAPSHOT_SHARE:
            file = self._rng.choice(FILES)
            self._editor = {"file": file, "line": self._rng.randint(1, 200), "unsaved": False}
            return _lane_signal("editor", self._editor, None)
        patch = {"line": self._rng.randint(1, 200), "unsaved": not old["unsaved"]}
        self._editor = {**old, **patch}
        return _lane_signal("editor", self._editor, patch)

    async def _notify(self, _stop: asyncio.Event) -> None:
        """One notification, drawn by weight (low most often, urgent rarely)."""
        weights = [weight for weight, _ in NOTIFICATIONS]
        _, template = self._rng.choices(NOTIFICATIONS, weights=weights)[0]
        self._event += 1
        result = await self._agent.send_notification_signal(
            _fill(template, self._event), **self._target
        )
        if result.get("delivery_error"):
            self._say(f"demo: notification not delivered yet: {result['delivery_error']}")
