"""The notification inbox: records, merging, the delivery policy, inbox operations, bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from helpers.common import AgentFactory, Seen
from helpers.sql import rows as store_rows

from tui_agent import Agent
from tui_agent.errors import ConfigError, SignalError, StoreError
from tui_agent.notifications import default_decision
from tui_agent.store.records import stored_message
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "user-1", "thread-1"


@pytest.fixture
def make_agent(agents: AgentFactory, memory: Any, seen: Seen) -> AgentFactory:
    """``make_agent(notifications=None)``: an inbox agent on ``memory`` whose model is ``seen``."""

    def make(notifications: Any = None) -> Agent:
        return agents(name="inbox", instructions="triage", model=ScriptedModel(handler=seen),
                      memory=memory, notifications=notifications)

    return make


@pytest.fixture
def agent(make_agent: AgentFactory) -> Any:
    return make_agent()


async def notify(agent: Any, n: Any, **kw: Any) -> Any:
    result = await agent.send_notification_signal(n, resource_id=R, thread_id=T, **kw)
    for one in result if isinstance(result, list) else [result]:
        accepted = one.get("accepted") or {}
        if accepted.get("action") == "wake":
            await accepted["output"].result()
    return result


async def make_active(memory: Any) -> str:
    """A run of another process holds the thread: it is active."""
    assert await memory.store.start_run(T, R, "run-x", owner="other-process", ttl_s=60)
    return "run-x"


async def pending_signal_messages(memory: Any) -> list[str]:
    rows = await store_rows(
        memory.store, "SELECT message, data FROM signals WHERE thread_id=? ORDER BY seq", T
    )
    # A routed signal's model message is rendered from its data when read (stored once).
    return [stored_message(m, json.loads(d))["content"] for m, d in rows]


def gh(summary: str = "CI failed on main", **extra: Any) -> dict[str, Any]:
    return {"source": "github", "kind": "ci-status", "summary": summary, **extra}


# -- the default policy ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("priority", "state", "action", "summary_now", "deliver_now"),
    [
        ("urgent", "idle", "deliver", False, False),
        ("urgent", "active", "deliver", False, False),
        ("high", "idle", "deliver", False, False),
        ("high", "active", "summarize", False, True),
        ("medium", "idle", "deliver", False, False),
        ("medium", "active", "summarize", True, False),
        ("low", "idle", "summarize", True, False),
        ("low", "active", "summarize", True, False),
    ],
)
def test_default_policy_table(
    priority: str, state: str, action: str, summary_now: bool, deliver_now: bool
) -> None:
    now = datetime.now(UTC)
    decision = default_decision(priority, state, now)
    assert decision.action == action
    assert decision.reason and priority in decision.reason
    assert (decision.summary_at == now) is summary_now
    assert (decision.deliver_at == now) is deliver_now


async def test_idle_medium_is_delivered_in_full(agent: Any, memory: Any, seen: Seen) -> None:
    result = await notify(agent, gh(attributes={"repo": "acme/app"}))
    record = result["record"]
    assert result["decision"].action == "deliver"
    assert result["accepted"]["action"] == "wake"
    assert result["run_id"] == result["accepted"]["run_id"]
    assert record.status == "delivered"
    assert record.delivered_at is not None and record.delivered_at.tzinfo is not None
    assert record.delivery_attempts == 1
    assert seen.user_texts() == [
        f'<notification id="{record.id}" source="github" kind="ci-status" priority="medium"'
        ' repo="acme/app">CI failed on main</notification>'
    ]


async def test_idle_low_is_left_for_a_digest(agent: Any, seen: Seen) -> None:
    result = await notify(agent, gh(priority="low"))
    assert result["decision"].action == "summarize"
    assert "signal" not in result
    assert result["record"].status == "pending"
    assert result["record"].summary_at is not None
    assert seen.calls == []


async def test_active_high_sends_a_digest_now_and_holds_the_full_one(
    agent: Any, memory: Any
) -> None:
    run_id = await make_active(memory)
    await notify(agent, {"source": "slack", "kind": "mention", "summary": "ping",
                         "priority": "low"})
    result = await notify(agent, gh(priority="high"))
    assert result["decision"].action == "summarize"
    assert result["accepted"] == {"action": "deliver", "run_id": run_id}
    record = result["record"]
    assert record.status == "pending"
    assert record.summarized_at is not None and record.deliver_at is not None
    assert await pending_signal_messages(memory) == [
        '<notification-summary pending="2" priority="high">github: 1, slack: 1'
        "</notification-summary>"
    ]


async def test_active_urgent_is_delivered_into_the_run(agent: Any, memory: Any) -> None:
    run_id = await make_active(memory)
    result = await notify(agent, gh(priority="urgent"))
    assert result["accepted"] == {"action": "deliver", "run_id": run_id}
    assert result["record"].status == "delivered"
    assert await pending_signal_messages(memory) == [
        f'<notification id="{result["record"].id}" source="github" kind="ci-status"'
        ' priority="urgent">CI failed on main</notification>'
    ]


async def test_active_medium_waits_for_the_dispatcher(agent: Any, memory: Any) -> None:
    await make_active(memory)
    result = await notify(agent, gh())
    assert result["decision"].action == "summarize"
    assert result["record"].summary_at is not None
    assert await pending_signal_messages(memory) == []


# -- merging ---------------------------------------------------------------------------------------

async def test_same_dedupe_key_merges_into_the_pending_record(agent: Any, memory: Any) -> None:
    first = await notify(agent, gh("1 failing", priority="low", dedupe_key="ci:main",
                                   attributes={"a": 1, "b": 1}))
    second = await notify(agent, gh("3 failing", priority="low", dedupe_key="ci:main",
                                    attributes={"b": 2}))
    record = second["record"]
    assert record.id == first["record"].id
    assert record.summary == "3 failing"
    assert record.coalesced_count == 2
    assert record.attributes == {"a": 1, "b": 2}
    assert len(await memory.list_notifications(T)) == 1


async def test_same_coalesce_key_merges_into_the_pending_record(agent: Any, memory: Any) -> None:
    a = await notify(agent, gh("x", priority="low", coalesce_key="pr-7"))
    b = await notify(agent, gh("y", priority="low", coalesce_key="pr-7"))
    assert b["record"].id == a["record"].id
    assert (b["record"].summary, b["record"].coalesced_count) == ("y", 2)
    assert len(await memory.list_notifications(T)) == 1


async def test_without_a_key_nothing_is_merged(agent: Any, memory: Any) -> None:
    a = await notify(agent, gh("same", priority="low"))
    b = await notify(agent, gh("same", priority="low"))
    assert a["record"].id != b["record"].id
    assert len(await memory.list_notifications(T)) == 2


@pytest.mark.parametrize("key", ["dedupe_key", "coalesce_key"])
async def test_a_key_of_another_kind_is_not_merged(agent: Any, memory: Any, key: str) -> None:
    a = await notify(agent, gh("CI failed", priority="low", **{key: "main"}))
    b = await notify(agent, {**gh("review asked", priority="low", **{key: "main"}),
                             "kind": "review"})
    assert a["record"].id != b["record"].id
    assert b["record"].coalesced_count == 1
    assert {r.kind for r in await memory.list_notifications(T)} == {"ci-status", "review"}


async def test_a_key_of_another_source_is_not_merged(agent: Any, memory: Any) -> None:
    a = await notify(agent, gh("CI failed", priority="low", dedupe_key="main"))
    b = await notify(agent, {**gh("CI failed", priority="low", dedupe_key="main"),
                             "source": "gitlab"})
    assert a["record"].id != b["record"].id
    assert len(await memory.list_notifications(T)) == 2


async def test_delivered_records_are_not_merged_into(agent: Any) -> None:
    first = await notify(agent, gh(dedupe_key="k"))
    assert first["record"].status == "delivered"
    second = await notify(agent, gh(dedupe_key="k"))
    assert second["record"].id != first["record"].id
    assert second["record"].coalesced_count == 1


@pytest.mark.parametrize("handled", ["mark_notification_seen", "dismiss_notification",
                                     "archive_notification"])
async def test_a_record_the_user_handled_is_not_merged_into(
    agent: Any, memory: Any, handled: str
) -> None:
    first = await notify(agent, gh("1 failing", priority="low", dedupe_key="ci"))
    await getattr(memory, handled)(first["record"].id)
    second = await notify(agent, gh("2 failing", priority="low", dedupe_key="ci"))
    assert second["record"].id != first["record"].id
    assert second["record"].status == "pending" and second["record"].coalesced_count == 1
    assert (await memory.get_notification(first["record"].id)).summary == "1 failing"


async def test_an_urgent_merged_into_a_pending_low_one_is_delivered_now(
    agent: Any, memory: Any, seen: Seen
) -> None:
    low = await notify(agent, gh("1 failing", priority="low", dedupe_key="ci:main"))
    assert low["record"].status == "pending" and seen.calls == []  # left for a digest
    urgent = await notify(agent, gh("main is down", priority="urgent", dedupe_key="ci:main"))
    record = urgent["record"]
    assert record.id == low["record"].id and record.coalesced_count == 2
    assert (record.priority, urgent["decision"].action, record.status) == (
        "urgent", "deliver", "delivered")
    assert seen.user_texts() == [
        f'<notification id="{record.id}" source="github" kind="ci-status" priority="urgent"'
        ' coalesced_count="2">main is down</notification>'

    ]


async def test_a_low_merged_into_a_pending_medium_one_keeps_it_medium(
    agent: Any, memory: Any
) -> None:
    await make_active(memory)  # a busy thread: the medium one waits for the dispatcher
    medium = await notify(agent, gh("3 failing", dedupe_key="ci:main"))
    assert medium["record"].status == "pending"
    low = await notify(agent, gh("2 failing", priority="low", dedupe_key="ci:main"))
    assert low["record"].id == medium["record"].id
    assert low["record"].priority == "medium"
    assert low["record"].summary == "2 failing"  # the newest text, the highest priority


async def test_a_list_in_gives_a_list_out(agent: Any, memory: Any) -> None:
    results = await notify(agent, [gh("a", priority="low"), gh("b", priority="low")])
    assert [r["record"].summary for r in results] == ["a", "b"]


async def test_new_records_get_ids_ordered_by_their_time(agent: Any, memory: Any) -> None:
    """A record's id starts with its creation's millisecond (a UUIDv7, as a signal's), so a
    long-lived inbox's inserts land at the end of its primary key instead of on a random page
    of it each (a burst into 60,000 records: 14-16k/s with random ids, 18-19k/s now)."""
    sent = [await notify(agent, gh(f"n{i}", priority="low")) for i in range(3)]  # a plain one
    sent.append(await notify(agent, gh("with a list", priority="low", metadata={"k": [1]})))
    ids = [r["record"].id for r in sent]
    millis = [int(i[:12], 16) for i in ids]
    assert millis == sorted(millis) and len(set(ids)) == len(ids)
    for record_id, result in zip(ids, sent, strict=True):
        created_ms = result["record"].created_at.timestamp() * 1000
        assert abs(int(record_id[:12], 16) - created_ms) < 50
        assert record_id[12] == "7"  # the UUID's version


# -- configured policy -----------------------------------------------------------------------------

async def test_policy_order_decide_then_source_then_priority_then_default(
    memory: Any, seen: Seen, make_agent: AgentFactory
) -> None:
    def decide(record: Any, thread_state: str) -> Any:
        assert thread_state == "idle"
        return "discard" if record.kind == "spam" else None

    agent = make_agent({"delivery_policy": {
        "decide": decide,
        "sources": {"slack": "persist"},
        "priorities": {"low": {"action": "defer", "deliver_at": datetime(2030, 1, 1)}},
        "default": {"action": "summarize", "summary_at": datetime(2031, 1, 1, tzinfo=UTC)},
    }})
    spam = await notify(agent, gh(kind="spam"))
    slack = await notify(agent, {"source": "slack", "kind": "dm", "summary": "hi",
                                 "priority": "low"})
    low = await notify(agent, gh(priority="low"))
    other = await notify(agent, gh())
    assert spam["decision"].reason == "delivery_policy.decide()"
    assert spam["record"].status == "discarded" and spam["record"].discarded_at is not None
    assert slack["decision"].reason == "delivery_policy.sources['slack']"
    assert slack["accepted"] == {"action": "persist"} and slack["persisted"] is True
    assert low["record"].deliver_at == datetime(2030, 1, 1, tzinfo=UTC)
    assert other["record"].summary_at == datetime(2031, 1, 1, tzinfo=UTC)
    assert seen.calls == []  # nothing woke the model
    history = await memory.store.list_messages(T)
    assert [m.content for m in history] == [
        f'<notification id="{slack["record"].id}" source="slack" kind="dm" priority="low">hi'
        "</notification>"
    ]


async def test_async_decide_with_a_time(make_agent: AgentFactory) -> None:
    later = datetime.now(UTC) + timedelta(minutes=30)

    async def decide(record: Any, thread_state: str) -> Any:
        return {"action": "summarize", "summary_at": later, "reason": "batch lows"}

    agent = make_agent({"delivery_policy": {"decide": decide}})
    result = await notify(agent, gh(priority="urgent"))
    assert result["decision"].reason == "batch lows"
    assert result["record"].summary_at == later


@pytest.mark.parametrize(("action", "field"), [("summarize", "summary_at"),
                                               ("defer", "deliver_at")])
@pytest.mark.parametrize("sooner_first", [True, False])
async def test_a_merged_record_is_due_at_the_sooner_of_its_two_times(
    make_agent: AgentFactory, action: str, field: str, sooner_first: bool
) -> None:
    now = datetime.now(UTC)
    soon, late = now + timedelta(minutes=10), now + timedelta(hours=2)
    times = iter([soon, late] if sooner_first else [late, soon])

    def decide(record: Any, thread_state: str) -> Any:
        return {"action": action, field: next(times)}

    agent = make_agent({"delivery_policy": {"decide": decide}})
    first = await notify(agent, gh("1 failing", dedupe_key="ci"))
    second = await notify(agent, gh("2 failing", dedupe_key="ci"))
    assert second["record"].id == first["record"].id
    assert getattr(second["record"], field) == soon


async def test_policy_returning_unknown_action_stores_nothing(
    memory: Any, make_agent: AgentFactory
) -> None:
    agent = make_agent({"delivery_policy": {"decide": lambda r, s: "shout"}})
    with pytest.raises(ConfigError, match="'shout'"):
        await notify(agent, [gh("fine"), gh("also fine")])
    assert await memory.list_notifications() == []


def test_bad_policy_config_fails_at_construction(make_agent: AgentFactory) -> None:
    with pytest.raises(ConfigError, match="'explode'"):
        make_agent({"delivery_policy": {"priorities": {"low": "explode"}}})
    with pytest.raises(ConfigError, match="priority 'critical'"):
        make_agent({"delivery_policy": {"priorities": {"critical": "deliver"}}})
    with pytest.raises(ConfigError, match="deliver_at"):
        make_agent({"delivery_policy": {"default": "defer"}})
    with pytest.raises(ConfigError, match="delivery_policy"):
        make_agent({"deliveryPolicy": {}})


# -- inbox operations ------------------------------------------------------------------------------

async def test_list_search_and_status_changes(agent: Any, memory: Any) -> None:
    a = (await notify(agent, gh("Build broke", priority="low")))["record"]
    b = (await notify(agent, {"source": "slack", "kind": "mention", "summary": "lunch?",
                              "priority": "low"}))["record"]
    c = (await notify(agent, {"source": "email", "kind": "invoice", "summary": "50% off",
                              "priority": "low"}))["record"]
    assert [r.id for r in await memory.list_notifications(T)] == [c.id, b.id, a.id]
    assert [r.id for r in await memory.list_notifications(T, limit=1)] == [c.id]
    assert [r.id for r in await memory.search_notifications("BROKE")] == [a.id]
    assert [r.id for r in await memory.search_notifications("mention", T)] == [b.id]
    assert [r.id for r in await memory.search_notifications("slack")] == [b.id]
    assert [r.id for r in await memory.search_notifications("50%")] == [c.id]
    assert [r.id for r in await memory.search_notifications("%")] == [c.id]  # literal, no wildcard
    assert await memory.search_notifications("_") == []
    seen_rec = await memory.mark_notification_seen(a.id)
    dismissed = await memory.dismiss_notification(b.id)
    archived = await memory.archive_notification(c.id)
    assert (seen_rec.status, dismissed.status, archived.status) == ("seen", "dismissed",
                                                                     "archived")
    assert seen_rec.seen_at and dismissed.dismissed_at and archived.archived_at
    assert seen_rec.summary_at is None  # a seen record gets no digest any more
    assert [r.id for r in await memory.list_notifications(status="seen")] == [a.id]
    assert await memory.list_notifications(thread_id="other") == []
    assert (await memory.get_notification(c.id)).status == "archived"
    with pytest.raises(StoreError, match="no notification 'nope'"):
        await memory.dismiss_notification("nope")
    with pytest.raises(ValueError, match="status 'unread'"):
        await memory.list_notifications(status="unread")


# -- bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("notification", "match"),
    [
        (gh(priority="critical"), "unknown notification priority 'critical'"),
        ({**gh(), "source": ""}, "'source'"),
        ({**gh(), "kind": "  "}, "'kind'"),
        ({**gh(), "summary": None}, "'summary'"),
        ({"kind": "x", "summary": "y"}, "'source'"),
        ({**gh(), "dedupeKey": "k"}, "'dedupeKey' → 'dedupe_key'"),
        (gh(attributes={"id": "forged"}), "set from the record"),
        (gh(attributes={"bad name": 1}), "attribute name"),
        (gh(payload={1, 2}), "payload must be JSON"),
        ("just text", "must be a dict"),
        ([], "empty list"),
    ],
)
async def test_bad_notification_raises_and_stores_nothing(
    agent: Any, memory: Any, notification: Any, match: str
) -> None:
    with pytest.raises(SignalError, match=match):
        await notify(agent, notification)
    with pytest.raises(SignalError, match=match):
        await notify(agent, [gh("valid"), notification] if notification != [] else [])
    assert await memory.list_notifications() == []
    assert await memory.store.get_thread(T) is None


async def test_target_and_memory_are_required(make_agent: AgentFactory) -> None:
    agent = make_agent()
    with pytest.raises(SignalError, match="resource_id"):
        await agent.send_notification_signal(gh(), thread_id=T)
    bare = Agent(name="bare", instructions="x", model=ScriptedModel(replies=["ok"]))
    with pytest.raises(ConfigError, match="no memory"):
        await bare.send_notification_signal(gh(), resource_id=R, thread_id=T)


async def test_thread_of_another_resource_is_refused(agent: Any, memory: Any) -> None:
    await memory.store.ensure_thread(T, "someone-else")
    with pytest.raises(SignalError, match="belongs to resource 'someone-else'"):
        await agent.send_notification_signal(gh(), resource_id=R, thread_id=T)
    assert await memory.list_notifications() == []


async def test_a_run_id_alone_targets_its_thread(agent: Any, memory: Any) -> None:
    run_id = await make_active(memory)
    result = await agent.send_notification_signal(gh(priority="urgent"), run_id=run_id)
    assert result["record"].thread_id == T and result["record"].resource_id == R
    assert result["accepted"] == {"action": "deliver", "run_id": run_id}
