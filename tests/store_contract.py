"""The store contract (``tui_agent.store.contract.Store``) as tests that only use its methods:
no SQL, no engine. ``tests/test_store_contract.py`` runs them against every store factory; a
new store joins by adding its factory there.

A lease taken with a negative TTL stands for a run whose owner died (already expired).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from tui_agent.errors import ApprovalError, LeaseLostError, SignalError, StoreError
from tui_agent.store import Store
from tui_agent.store.approvals import ApprovalIn
from tui_agent.store.codec import new_id
from tui_agent.store.records import EventIn, MessageIn, NotificationRecord, RouteResult, SignalIn

T, R, OWNER = "thread-1", "ann", "owner-1"
DEAD_TTL = -1.0  # a lease that expired already: its owner died


def user_signal(text: str) -> SignalIn:
    return SignalIn(
        id=new_id(), type="user", message={"role": "user", "content": text},
        data={"type": "user", "contents": text},
    )


def notification(**fields: Any) -> NotificationRecord:
    now = datetime.now(UTC)
    base: dict[str, Any] = {
        "id": new_id(), "thread_id": T, "resource_id": R, "source": "github", "kind": "ci",
        "priority": "medium", "status": "pending", "summary": "build failed",
        "created_at": now, "updated_at": now,
    }
    return NotificationRecord(**(base | fields))


async def save(store: Store, rec: NotificationRecord, now: float, **kw: Any) -> NotificationRecord:
    options: dict[str, Any] = {"merge": False, "claim_token": None, "claim_expires_at": None}
    return await store.save_notification(rec, now=now, **(options | kw))


class StoreContract:
    """Every test takes ``store``: a fresh, empty store of the kind under test."""

    # -- the store itself -----------------------------------------------------------------------

    async def test_close_is_idempotent_and_the_store_reopens(self, store: Store) -> None:
        assert isinstance(store.location, str) and store.location
        await store.ensure_thread(T, R)
        await store.close()
        await store.close()
        thread = await store.ensure_thread("after", R)  # reopened on its next use
        assert thread.id == "after"

    # -- threads, messages, the event log -------------------------------------------------------

    async def test_threads_belong_to_one_resource(self, store: Store) -> None:
        thread = await store.ensure_thread(T, R, title="first", metadata={"k": 1})
        assert (thread.id, thread.resource_id, thread.title, thread.metadata) == (
            T, R, "first", {"k": 1})
        assert thread.created_at.tzinfo is not None
        with pytest.raises(StoreError, match="belongs to resource"):
            await store.ensure_thread(T, "bob")
        with pytest.raises(StoreError, match="no thread"):
            await store.update_thread("missing", title="x")
        assert await store.get_thread("missing") is None

    async def test_threads_list_most_recently_updated_first(self, store: Store) -> None:
        for name in ("a", "b", "c"):
            await store.ensure_thread(name, R)
        await store.ensure_thread("other", "bob")
        await store.update_thread("a", title="touched")
        assert (await store.list_threads(R))[0].id == "a"
        assert {t.id for t in await store.list_threads()} == {"a", "b", "c", "other"}

    async def test_messages_keep_their_order_and_page_backwards(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        rows = [MessageIn("user", {"n": n}) for n in range(7)]
        await store.append(T, R, messages=rows[:4])
        await store.append(T, R, messages=rows[4:])
        newest = await store.list_messages(T, limit=3)
        assert [m.content["n"] for m in newest] == [4, 5, 6]
        older = await store.list_messages(T, limit=3, before=newest[0].id)
        assert [m.content["n"] for m in older] == [1, 2, 3]
        assert newest[0].thread_id == T and newest[0].role == "user"

    async def test_search_finds_messages_by_their_words_newest_first(self, store: Store) -> None:
        await store.ensure_thread(T, R, title="groceries")
        await store.ensure_thread("other", "bob")
        await store.append(T, R, messages=[
            MessageIn("user", "Buy some Apples, and pears"),
            MessageIn("assistant", [{"type": "text", "text": "Sure: apples."},
                                    {"type": "image", "url": "apples.png"}]),
            MessageIn("tool", "apples from a tool"),  # tool output is not searched
            MessageIn("user", {"n": 1}),  # no text
        ])
        await store.append("other", "bob", messages=[MessageIn("user", "apple pie_recipe")])
        hits = await store.search_messages("APPLE")
        assert [(h.thread_id, h.role, h.text) for h in hits] == [
            ("other", "user", "apple pie_recipe"),
            (T, "assistant", "Sure: apples."),
            (T, "user", "Buy some Apples, and pears"),
        ]
        assert hits[1].thread_title == "groceries" and hits[1].resource_id == R
        assert hits[1].created_at.tzinfo is not None and hits[0].seq > hits[1].seq
        messages = {m.id for m in await store.list_messages(T)}
        assert {h.message_id for h in hits[1:]} <= messages
        assert [h.role for h in await store.search_messages("apples", thread_id=T)] == [
            "assistant", "user"]
        assert len(await store.search_messages("apples", limit=1)) == 1
        assert [h.text for h in await store.search_messages("pears buy")] == [
            "Buy some Apples, and pears"]  # every word, in any order
        assert await store.search_messages('"pears buy"') == []  # a phrase: in its order
        assert len(await store.search_messages('"some apple"')) == 1
        assert len(await store.search_messages("recipe")) == 1  # _ splits words
        assert await store.search_messages("tool") == []
        assert await store.search_messages("  ,;: ") == []  # no words: nothing, no error
        assert await store.search_messages("url") == []

    async def test_search_finds_a_signal_by_its_contents_once_committed(
        self, store: Store
    ) -> None:
        signal = user_signal("the deploy is blocked on review")
        await store.route_signal(T, R, signal, if_active="deliver", if_idle="persist",
                                 owner=OWNER, ttl_s=5)
        hits = await store.search_messages("deploy blocked", thread_id=T)
        assert [(h.role, h.text) for h in hits] == [("user", "the deploy is blocked on review")]

    async def test_a_thread_exported_and_imported_reads_back_the_same(self, store: Store) -> None:
        await store.ensure_thread(T, R, title="t", metadata={"k": 1})
        await store.append(T, R, messages=[MessageIn("user", "hello there")])
        await store.route_signal(T, R, user_signal("a signal"), if_active="deliver",
                                 if_idle="persist", owner=OWNER, ttl_s=5)
        archive = await store.export_thread(T)
        assert archive is not None and await store.export_thread("missing") is None
        assert [m.role for m in archive.messages] == ["user", "user"]
        assert [s.data["contents"] for s in archive.signals] == ["a signal"]
        with pytest.raises(StoreError, match="exists already"):
            await store.import_thread(archive)
        await store.append(T, R, messages=[MessageIn("user", "later")])
        await store.import_thread(archive, replace=True)
        assert await store.export_thread(T) == archive
        assert [m.content for m in await store.list_messages(T)] == ["hello there", "a signal"]
        assert len(await store.search_messages("signal", thread_id=T)) == 1

    async def test_the_event_log_is_ordered_and_read_on_from_a_cursor(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        assert await store.last_event_seq(T) == 0
        await store.append_events(T, [EventIn("text-delta", {"text": str(n)}) for n in range(3)])
        await store.append(T, R, events=[EventIn("finish", {"finish_reason": "stop"}, "r1")])
        events = await store.read_events(T, 0)
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(seqs) and len(set(seqs)) == 4
        assert [e["type"] for e in events] == ["text-delta"] * 3 + ["finish"]
        assert events[3]["run_id"] == "r1" and events[3]["from"] == "AGENT"
        assert await store.read_events(T, seqs[1]) == events[2:]
        assert await store.last_event_seq(T) == seqs[-1]

    async def test_appends_wake_listeners_of_that_thread_and_count_commits(
        self, store: Store
    ) -> None:
        await store.ensure_thread(T, R)
        woken, other = store.add_listener(T), store.add_listener("other")
        before = store.local_commits
        await store.append_events(T, [EventIn("text-delta", {"text": "x"})])
        assert woken.is_set() and not other.is_set()
        assert store.local_commits > before
        assert isinstance(await store.data_version(), int)
        store.remove_listener(T, woken)
        store.remove_listener("other", other)
        store.remove_listener("other", other)  # unknown ones are ignored

    async def test_queued_appends_commit_in_order(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        queued = [store.append_soon(T, R, messages=[MessageIn("user", f"m{i}")],
                                    events=[EventIn("text-delta", {"text": f"d{i}"})])
                  for i in range(5)]
        await asyncio.gather(*queued)
        assert [m.content for m in await store.list_messages(T)] == [f"m{i}" for i in range(5)]
        texts = [e["payload"]["text"] for e in await store.read_events(T, 0)]
        assert texts == [f"d{i}" for i in range(5)]

    async def test_activity_and_usage_of_threads(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        await store.append(T, R, messages=[MessageIn("user", "hi"), MessageIn("user", "there")])
        assert await store.start_run("busy", R, "r1", owner=OWNER, ttl_s=30)
        usage = {"usage": {"input_tokens": 10, "output_tokens": 3}}
        await store.append_events(T, [EventIn("finish", usage), EventIn("error", usage)])
        assert await store.thread_activity() == {T: (2, False), "busy": (0, True)}
        assert await store.thread_usage(T) == {"input_tokens": 20, "output_tokens": 6}

    async def test_superseded_messages_are_marked_once_and_logged(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        await store.ensure_thread("other", R)
        rows = [MessageIn("user", "q"), MessageIn("assistant", "a1", "r1", metadata={"k": 1}),
                MessageIn("tool", "t1", "r1")]
        await store.append(T, R, messages=rows)
        foreign = MessageIn("assistant", "elsewhere")
        await store.append("other", R, messages=[foreign])
        woken = store.add_listener(T)
        ids = [rows[1].id, rows[2].id, foreign.id, "unknown"]
        assert await store.supersede_messages(T, ids, by="r2") == ids[:2]
        assert woken.is_set()
        stored = {m.id: m.metadata for m in await store.list_messages(T)}
        assert stored[rows[0].id] == {}
        assert stored[rows[1].id]["k"] == 1 and stored[rows[1].id]["superseded"]["by"] == "r2"
        assert isinstance(stored[rows[2].id]["superseded"]["at"], float)
        assert (await store.list_messages("other"))[0].metadata == {}
        events = await store.read_events(T, 0)
        assert [(e["type"], e["run_id"], e["from"], e["payload"]) for e in events] == [
            ("data-superseded", None, "SYSTEM",
             {"message_ids": ids[:2], "by": "r2", "run_ids": ["r1"], "signal_ids": []})]
        assert await store.supersede_messages(T, ids, by="again") == []  # marked before
        assert len(await store.read_events(T, 0)) == 1
        store.remove_listener(T, woken)

    # -- runs and leases ------------------------------------------------------------------------

    async def test_one_live_run_per_thread_and_finishing_releases_it(self, store: Store) -> None:
        assert await store.start_run(T, R, "r1", owner=OWNER, ttl_s=30, title="t")
        assert not await store.start_run(T, R, "r2", owner="other", ttl_s=30)
        active = await store.active_run(T)
        assert active is not None and (active.run_id, active.owner) == ("r1", OWNER)
        outcome = await store.finish_run(
            T, R, "r1", owner=OWNER, status="finished", finish_reason="stop",
            messages=[MessageIn("assistant", "done", run_id="r1")],
            events=[EventIn("finish", {"finish_reason": "stop"}, "r1")],
        )
        assert outcome.finished and outcome.next_run_id is None
        assert await store.active_run(T) is None
        run = await store.get_run("r1")
        assert run is not None and (run.status, run.finish_reason) == ("finished", "stop")
        assert [m.content for m in await store.list_messages(T)] == ["done"]
        assert await store.start_run(T, R, "r2", owner="other", ttl_s=30)
        assert (await store.list_runs(T))[0].id == "r2"

    # -- fencing: a run that lost its lease writes nothing more --------------------------------

    async def _stale_and_successor(self, store: Store) -> tuple[str, str]:
        """Run "old" whose owner stalled past its TTL, and "new", which took the thread over."""
        assert await store.start_run(T, R, "old", owner="stalled", ttl_s=DEAD_TTL)
        assert await store.start_run(T, R, "new", owner=OWNER, ttl_s=30)  # reaps "old"
        return "old", "new"

    async def test_a_stale_runs_appends_are_refused(self, store: Store) -> None:
        old, new = await self._stale_and_successor(store)
        before = await store.read_events(T, 0)
        with pytest.raises(LeaseLostError):
            await store.append(T, R, messages=[MessageIn("assistant", "late", run_id=old)],
                               events=[EventIn("text-delta", {"text": "late"}, old)], fence=old)
        with pytest.raises(LeaseLostError):
            await store.append_soon(T, R, events=[EventIn("text-delta", {"text": "x"}, old)],
                                    fence=old)
        await store.append(T, R, events=[EventIn("text-delta", {"text": "ok"}, new)], fence=new)
        after = await store.read_events(T, 0)
        assert [e["run_id"] for e in after[len(before):]] == [new]
        assert await store.list_messages(T) == []

    async def test_a_refused_grouped_append_fails_alone(self, store: Store) -> None:
        old, new = await self._stale_and_successor(store)
        stale = store.append_soon(T, R, events=[EventIn("text-delta", {"text": "x"}, old)],
                                  fence=old)
        fresh = store.append_soon(T, R, events=[EventIn("text-delta", {"text": "y"}, new)],
                                  fence=new)
        results = await asyncio.gather(stale, fresh, return_exceptions=True)
        assert isinstance(results[0], LeaseLostError) and results[1] is None
        texts = [e["payload"].get("text") for e in await store.read_events(T, 0)]
        assert "y" in texts and "x" not in texts

    async def test_a_stale_run_cannot_claim_its_successors_signals(self, store: Store) -> None:
        old, new = await self._stale_and_successor(store)
        routed = await self._route(store, "for the new run")
        assert (routed.action, routed.run_id) == ("deliver", new)
        with pytest.raises(LeaseLostError):
            await store.claim_signals(T, R, old, messages_before=[MessageIn("assistant", "l")])
        taken = await store.claim_signals(T, R, new)
        assert [s["message"]["content"] for s in taken] == ["for the new run"]
        assert [m.content for m in await store.list_messages(T)] == ["for the new run"]

    async def test_a_stale_runs_finish_is_refused_and_it_stays_interrupted(
        self, store: Store
    ) -> None:
        old, new = await self._stale_and_successor(store)
        with pytest.raises(LeaseLostError):
            await store.finish_run(T, R, old, owner="stalled", status="finished",
                                   finish_reason="stop", events=[EventIn("finish", {}, old)],
                                   force=True)
        run = await store.get_run(old)
        assert run is not None and run.status == "interrupted"
        active = await store.active_run(T)
        assert active is not None and active.run_id == new  # the successor keeps its lease
        assert not [e for e in await store.read_events(T, 0)
                    if e["run_id"] == old and e["type"] == "finish"]

    async def test_a_reaped_run_with_no_successor_is_fenced_too(self, store: Store) -> None:
        assert await store.start_run(T, R, "old", owner="stalled", ttl_s=DEAD_TTL)
        assert await store.reap_expired_lease(T)
        with pytest.raises(LeaseLostError):
            await store.append(T, R, events=[EventIn("text-delta", {"text": "x"}, "old")],
                               fence="old")
        with pytest.raises(LeaseLostError):
            await store.finish_run(T, R, "old", owner="stalled", status="finished",
                                   finish_reason="stop", events=[EventIn("finish")], force=True)

    # -- stranded signals: a dead run's waiting signals are taken over ------------------------

    async def _dead_run_with_pending(self, store: Store, *texts: str) -> str:
        dead = await self._route(store, texts[0], ttl_s=DEAD_TTL)  # woke, then its owner died
        for text in texts[1:]:
            await store.route_signal(T, R, user_signal(text), if_active="deliver",
                                     if_idle="wake", owner="sender", ttl_s=DEAD_TTL)
        assert dead.run_id is not None
        return dead.run_id

    async def test_pending_signals_of_a_dead_run_are_rescued_once(self, store: Store) -> None:
        await self._dead_run_with_pending(store, "one")
        assert await store.stranded_threads() == [T]
        rescued = await asyncio.gather(*(
            store.rescue_stranded(T, owner=f"o{n}", ttl_s=30, agent_id="a") for n in range(4)))
        winners = [r for r in rescued if r is not None]
        assert len(winners) == 1
        run_id, resource_id = winners[0]
        assert resource_id == R
        active = await store.active_run(T)
        assert active is not None and active.run_id == run_id
        assert await store.stranded_threads() == []
        taken = await store.claim_signals(T, R, run_id)
        assert [s["message"]["content"] for s in taken] == ["one"]

    async def test_the_rescue_outlook_says_what_is_stranded_and_when_the_next_will_be(
        self, store: Store
    ) -> None:
        assert await store.rescue_outlook() == (False, None)  # nothing waits: no deadline
        await self._route(store, "one", ttl_s=30)  # woke: pending behind a live lease
        stranded, due_in = await store.rescue_outlook()
        assert not stranded and due_in is not None and 25 < due_in <= 30
        other = "thread-2"
        await store.route_signal(other, R, user_signal("two"), if_active="deliver",
                                 if_idle="wake", owner="gone", ttl_s=DEAD_TTL)
        stranded, due_in = await store.rescue_outlook()
        assert stranded and due_in is not None and 25 < due_in <= 30  # the live one still due
        assert await store.rescue_stranded(other, owner="o", ttl_s=30) is not None
        assert (await store.rescue_outlook())[0] is False

    async def test_a_look_finds_every_stranded_thread_among_threads_with_many_waiting(
        self, store: Store
    ) -> None:
        """The look walks the threads signals wait on (not each signal): a stranded thread
        is found before, between and after threads whose many signals wait behind a live
        run, pending or queued."""
        options: dict[str, Any] = {"if_active": "deliver", "if_idle": "wake"}
        for thread, owner, ttl in (("a", "gone", DEAD_TTL), ("b", OWNER, 30),
                                   ("c", "gone", DEAD_TTL), ("d", OWNER, 30),
                                   ("e", "gone", DEAD_TTL)):
            await store.route_signal(thread, R, user_signal(f"{thread} wakes"), owner=owner,
                                     ttl_s=ttl, **options)
        for thread in ("b", "d"):  # many waiting behind the live runs
            await asyncio.gather(*[
                store.route_signal_soon(thread, R, user_signal(f"{thread}{i}"), owner=OWNER,
                                        ttl_s=30, queue=i % 2 == 0, **options)
                for i in range(12)])
        assert sorted(await store.stranded_threads()) == ["a", "c", "e"]
        stranded, due_in = await store.rescue_outlook()
        assert stranded and due_in is not None and 25 < due_in <= 30
        for thread in ("a", "c", "e"):
            assert await store.rescue_stranded(thread, owner=OWNER, ttl_s=30) is not None
        assert await store.stranded_threads() == []
        assert (await store.rescue_outlook())[0] is False

    async def test_claim_with_history_reads_the_history_then_takes_the_signals(
        self, store: Store
    ) -> None:
        await store.ensure_thread(T, R)
        await store.append(T, R, messages=[MessageIn("user", "old"), MessageIn("assistant", "a")])
        woke = await self._route(store, "new")
        assert woke.run_id is not None
        history, taken = await store.claim_with_history(T, R, woke.run_id, last_messages=1)
        assert [m.content for m in history] == ["a"]  # the last one, before the signal
        assert [s["message"]["content"] for s in taken] == ["new"]
        assert [m.content for m in await store.list_messages(T)] == ["old", "a", "new"]
        with pytest.raises(LeaseLostError):
            await store.claim_with_history(T, R, "not-the-lease-holder", last_messages=5)
        none, nothing = await store.claim_with_history(T, R, woke.run_id, last_messages=0)
        assert none == [] and nothing == []

    async def test_claim_wake_claims_and_reads_what_the_plan_needs(self, store: Store) -> None:
        await store.ensure_thread(T, R, metadata={"model": "openai/gpt-x"})
        await store.append(T, R, messages=[MessageIn("user", "old")])
        await store.set_agent_overrides("agent-w", {"instructions": "edited"})
        woke = await self._route(store, "new")
        assert woke.run_id is not None
        start = await store.claim_wake(T, R, woke.run_id, last_messages=5, agent_id="agent-w")
        assert [m.content for m in start.history] == ["old"]
        assert [s["message"]["content"] for s in start.taken] == ["new"]
        assert start.thread_model == "openai/gpt-x"
        assert start.overrides == {"instructions": "edited"}
        bare = await store.claim_wake(T, R, woke.run_id, last_messages=0, agent_id="nobody")
        assert (bare.history, bare.taken, bare.overrides) == ([], [], None)
        assert (await store.claim_wake(T, R, woke.run_id, last_messages=0)).overrides is None
        with pytest.raises(LeaseLostError):  # fenced: nothing is taken by a stale run
            await store.claim_wake(T, R, "not-the-lease-holder", last_messages=5)
        await store.update_thread(T, metadata={"model": None})
        plain = await store.claim_wake(T, R, woke.run_id, last_messages=0)
        assert plain.thread_model is None

    async def test_a_live_run_is_never_rescued(self, store: Store) -> None:
        await self._route(store, "one")
        assert await store.stranded_threads() == []
        assert await store.rescue_stranded(T, owner="o", ttl_s=30) is None

    async def test_a_queued_message_of_a_dead_run_gets_its_own_run(self, store: Store) -> None:
        assert await store.start_run(T, R, "dying", owner="gone", ttl_s=0.3)
        queued = await self._route(store, "later", queue=True, ttl_s=30)
        assert queued.action == "deliver"
        async with asyncio.timeout(5):  # its owner never renews: the lease runs out
            while await store.active_run(T) is not None:
                await asyncio.sleep(0.02)
        assert await store.stranded_threads() == [T]
        rescued = await store.rescue_stranded(T, owner="o", ttl_s=30)
        assert rescued == (queued.run_id, R)
        dying = await store.get_run("dying")
        assert dying is not None and dying.status == "interrupted"
        taken = await store.claim_signals(T, R, queued.run_id)
        assert [s["message"]["content"] for s in taken] == ["later"]

    async def test_keep_pending_leaves_signals_for_a_rescue(self, store: Store) -> None:
        woke = await self._route(store, "unanswered")
        assert woke.run_id is not None
        await store.finish_run(T, R, woke.run_id, owner=OWNER, status="interrupted",
                               finish_reason="interrupted", events=[EventIn("error")],
                               force=True, keep_pending=True)
        assert [w["status"] for w in await store.waiting_signals(T)] == ["pending"]
        assert await store.stranded_threads() == [T]
        assert await store.rescue_stranded(T, owner="o", ttl_s=30) is not None

    async def test_a_resume_marker_rescues_the_thread_and_stores_nothing(
        self, store: Store
    ) -> None:
        woke = await self._route(store, "taken, never answered")
        assert woke.run_id is not None
        assert [s["message"]["content"] for s in
                await store.claim_signals(T, R, woke.run_id)] == ["taken, never answered"]
        events_before = len(await store.read_events(T, 0))
        await store.finish_run(T, R, woke.run_id, owner=OWNER, status="failed",
                               finish_reason="error", events=[EventIn("error")], force=True,
                               keep_pending=True, resume=True)
        assert await store.waiting_signals(T) == []  # the marker is no caller's signal
        assert await store.stranded_threads() == [T]
        rescued = await store.rescue_stranded(T, owner="o", ttl_s=30)
        assert rescued is not None
        assert await store.claim_signals(T, R, rescued[0]) == []
        assert [m.content for m in await store.list_messages(T)] == ["taken, never answered"]
        types = [e["type"] for e in await store.read_events(T, 0)][events_before:]
        assert types == ["error", "start"]  # no echo of the marker
        assert await store.stranded_threads() == []

    async def test_another_agents_thread_is_left_alone(self, store: Store) -> None:
        await self._route(store, "one", ttl_s=DEAD_TTL, agent_id="theirs")
        assert await store.rescue_stranded(T, owner="o", ttl_s=30, agent_id="mine") is None
        assert await store.rescue_stranded(T, owner="o", ttl_s=30, agent_id="theirs")

    async def test_concurrent_starts_take_the_lease_once(self, store: Store) -> None:
        started = await asyncio.gather(
            *(store.start_run(T, R, f"r{n}", owner=f"o{n}", ttl_s=30) for n in range(8))
        )
        assert started.count(True) == 1

    async def test_a_dead_owner_s_run_is_reaped_once(self, store: Store) -> None:
        assert await store.start_run(T, R, "dead", owner="gone", ttl_s=DEAD_TTL)
        assert await store.active_run(T) is None
        assert await store.reap_expired_lease(T)
        assert not await store.reap_expired_lease(T)
        run = await store.get_run("dead")
        assert run is not None and run.status == "interrupted" and run.ended_at is not None
        assert [e["type"] for e in await store.read_events(T, 0)] == ["start", "interrupted"]

    async def test_a_live_lease_is_not_reaped(self, store: Store) -> None:
        assert await store.start_run(T, R, "r1", owner=OWNER, ttl_s=30)
        assert not await store.reap_expired_lease(T)

    async def test_abort_is_requested_from_sync_code_and_seen_on_renewal(
        self, store: Store
    ) -> None:
        assert store.request_abort_sync(T) is None  # no live run
        assert await store.start_run(T, R, "r1", owner=OWNER, ttl_s=30)
        assert await store.renew_lease(T, "r1", OWNER, 30) == (True, False)
        assert store.request_abort_sync(T) == "r1"
        assert await store.abort_requested(T, "r1")
        assert await store.renew_lease(T, "r1", OWNER, 30) == (True, True)
        assert await store.renew_lease(T, "r1", "not-the-owner", 30) == (False, False)

    async def test_scores_are_kept_on_the_run(self, store: Store) -> None:
        assert await store.start_run(T, R, "r1", owner=OWNER, ttl_s=30)
        await store.set_run_scores("r1", {"relevance": 0.5})
        run = await store.get_run("r1")
        assert run is not None and run.scores == {"relevance": 0.5}

    # -- signals --------------------------------------------------------------------------------

    async def _route(self, store: Store, text: str, **kw: Any) -> Any:
        options: dict[str, Any] = {"if_active": "deliver", "if_idle": "wake", "owner": OWNER,
                                   "ttl_s": 30}
        return await store.route_signal(T, R, user_signal(text), **(options | kw))

    async def test_queued_routes_decide_in_order_one_wake(self, store: Store) -> None:
        options: dict[str, Any] = {"if_active": "deliver", "if_idle": "wake", "owner": OWNER,
                                   "ttl_s": 30}
        routed = [store.route_signal_soon(T, R, user_signal(f"s{i}"), **options)
                  for i in range(4)]
        results = await asyncio.gather(*routed)
        assert [r.action for r in results] == ["wake", "deliver", "deliver", "deliver"]
        assert len({r.run_id for r in results}) == 1
        waiting = await store.waiting_signals(T)
        assert [w["data"]["contents"] for w in waiting] == ["s0", "s1", "s2", "s3"]

    async def test_routes_handed_to_callbacks_decide_in_order_one_wake(
        self, store: Store
    ) -> None:
        """route_signal_then: each callback hears its own decision once it is committed (the
        rows are readable then), in queue order, one wake; a failed route hears its error."""
        await store.ensure_thread(T, R)
        heard: list[tuple[str, Any, BaseException | None]] = []
        all_heard = asyncio.get_running_loop().create_future()

        def then(name: str, result: RouteResult | None, error: BaseException | None) -> None:
            heard.append((name, result, error))
            if len(heard) == 5:
                all_heard.set_result(None)

        options: dict[str, Any] = {"if_active": "deliver", "if_idle": "wake", "owner": OWNER,
                                   "ttl_s": 30}
        store.route_signal_then(partial(then, "other"), T, "another-resource",
                                user_signal("x"), **options)  # idle: a wake checks the owner
        for i in range(4):
            store.route_signal_then(partial(then, f"s{i}"), T, R, user_signal(f"s{i}"), **options)
        await asyncio.wait_for(all_heard, 10)
        assert [name for name, _, _ in heard] == ["other", "s0", "s1", "s2", "s3"]
        assert heard[0][1] is None and isinstance(heard[0][2], StoreError)
        results = [result for _, result, _ in heard[1:]]
        assert [r.action for r in results] == ["wake", "deliver", "deliver", "deliver"]
        assert len({r.run_id for r in results}) == 1
        waiting = await store.waiting_signals(T)
        assert [w["data"]["contents"] for w in waiting] == ["s0", "s1", "s2", "s3"]

    async def test_a_signal_wakes_an_idle_thread_then_joins_its_run(self, store: Store) -> None:
        woke = await self._route(store, "one")
        assert woke.action == "wake" and woke.run_id
        joined = await self._route(store, "two")
        assert (joined.action, joined.run_id) == ("deliver", woke.run_id)
        assert await store.has_pending_signals(T)
        waiting = await store.waiting_signals(T)
        assert [(w["status"], w["data"]["contents"]) for w in waiting] == [
            ("pending", "one"), ("pending", "two")]
        ended = await store.finish_run(T, R, woke.run_id, owner=OWNER, status="finished",
                                       finish_reason="stop", events=[EventIn("finish")])
        assert not ended.finished  # signals are pending: the run goes on
        taken = await store.claim_signals(
            T, R, woke.run_id, messages_before=[MessageIn("assistant", "so far")])
        assert [s["message"]["content"] for s in taken] == ["one", "two"]
        assert not await store.has_pending_signals(T)
        history = [m.content for m in await store.list_messages(T)]
        assert history == ["so far", "one", "two"]
        echoes = [e["type"] for e in await store.read_events(T, 0)]
        assert echoes == ["start", "data-user-message", "data-user-message"]

    async def test_of_concurrent_wakes_exactly_one_wakes(self, store: Store) -> None:
        results = await asyncio.gather(*(self._route(store, f"m{n}") for n in range(8)))
        actions = [r.action for r in results]
        assert actions.count("wake") == 1 and actions.count("deliver") == 7
        assert len({r.run_id for r in results}) == 1

    async def test_persist_and_discard_on_an_idle_thread(self, store: Store) -> None:
        assert (await self._route(store, "gone", if_idle="discard")).action == "discard"
        assert await store.get_thread(T) is None  # discard does not create the thread
        assert (await self._route(store, "kept", if_idle="persist")).action == "persist"
        assert [m.content for m in await store.list_messages(T)] == ["kept"]
        types = [e["type"] for e in await store.read_events(T, 0)]
        assert types == ["data-user-message"]  # its echo only: no run, no model call
        assert await store.active_run(T) is None

    async def test_a_queued_signal_starts_the_next_run_under_the_same_lease(
        self, store: Store
    ) -> None:
        first = await self._route(store, "now")
        queued = await self._route(store, "later", queue=True)
        assert queued.action == "deliver" and queued.run_id != first.run_id
        assert [w["status"] for w in await store.waiting_signals(T)] == ["pending", "queued"]
        assert queued.behind == first.run_id  # what its sender tells its rescuer by
        options: dict[str, Any] = {"if_active": "deliver", "if_idle": "wake", "owner": OWNER,
                                   "ttl_s": 30, "queue": True}
        burst = await asyncio.gather(  # the group commit's batch form says it too
            *[store.route_signal_soon(T, R, user_signal(f"q{i}"), **options) for i in range(3)])
        assert [r.behind for r in burst] == [first.run_id] * 3
        await store.claim_signals(T, R, first.run_id)
        outcome = await store.finish_run(T, R, first.run_id, owner=OWNER, status="finished",
                                         finish_reason="stop", events=[EventIn("finish")])
        assert outcome.finished and outcome.next_run_id == queued.run_id
        active = await store.active_run(T)
        assert active is not None and active.run_id == queued.run_id

    async def test_a_queued_signal_honours_if_active_persist_and_discard(
        self, store: Store
    ) -> None:
        await self._route(store, "now")
        kept = await self._route(store, "kept", queue=True, if_active="persist")
        gone = await self._route(store, "gone", queue=True, if_active="discard")
        assert (kept.action, gone.action) == ("persist", "discard")
        assert [w["status"] for w in await store.waiting_signals(T)] == ["pending"]
        assert "kept" in [m.content for m in await store.list_messages(T)]

    async def test_a_forced_end_keeps_pending_signals_as_history(self, store: Store) -> None:
        run = await self._route(store, "unread")
        outcome = await store.finish_run(T, R, run.run_id, owner=OWNER, status="aborted",
                                         finish_reason="abort", events=[EventIn("abort")],
                                         force=True)
        assert outcome.finished
        assert [m.content for m in await store.list_messages(T)] == ["unread"]
        assert [e["type"] for e in await store.read_events(T, 0)][-2:] == [
            "data-user-message", "abort"]

    # -- state lanes ----------------------------------------------------------------------------

    async def _put(self, store: Store, key: str, value: Any, mode: str = "snapshot") -> Any:
        def new_value(current: Any) -> Any:
            return value if mode == "snapshot" else {**(current or {}), **value}

        return await store.put_state_lane(
            T, "browser", mode=mode, cache_key=key, new_value=new_value,
            delta=None if mode == "snapshot" else value, contents=str(value),
        )

    async def test_a_lane_versions_each_change_and_skips_an_unchanged_one(
        self, store: Store
    ) -> None:
        await store.ensure_thread(T, R)
        assert await self._put(store, "k1", {"url": "a"}) == 1
        assert await self._put(store, "k1", {"url": "a"}) is None  # same mode and cache key
        assert await self._put(store, "k2", {"title": "A"}, mode="delta") == 2
        lane = await store.get_state_lane(T, "browser")
        assert lane is not None and lane.value == {"url": "a", "title": "A"}
        assert (lane.version, lane.mode, lane.cache_key) == (2, "delta", "k2")
        history = await store.state_lane_history(T, "browser")
        assert [(v.version, v.delta) for v in history] == [(2, {"title": "A"}), (1, None)]
        assert history[1].contents == str({"url": "a"})
        assert [lane.id for lane in await store.list_state_lanes(T)] == ["browser"]
        assert await store.get_state_lane(T, "editor") is None

    async def test_concurrent_puts_get_consecutive_versions(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        versions = await asyncio.gather(*(self._put(store, f"k{n}", n) for n in range(6)))
        assert sorted(versions) == [1, 2, 3, 4, 5, 6]

    async def test_a_lane_put_returns_the_lane_as_written_and_checks_its_thread(
        self, store: Store
    ) -> None:
        def put(resource: str, key: str) -> Any:
            return store.put_state_lane_record(
                T, "editor", mode="delta", cache_key=key, new_value=lambda c: {**(c or {}), key: 1},
                delta={key: 1}, contents=key, resource_id=resource)

        with pytest.raises(SignalError, match="no thread"):
            await put(R, "k1")  # no such thread yet: nothing written
        await store.ensure_thread(T, R)
        with pytest.raises(SignalError, match="belongs to resource"):
            await put("someone-else", "k1")
        assert await store.get_state_lane(T, "editor") is None
        written = await put(R, "k1")
        assert written is not None and (written.version, written.value) == (1, {"k1": 1})
        again = await put(R, "k2")
        assert again == await store.get_state_lane(T, "editor")  # what a read gives after
        assert again is not None and again.value == {"k1": 1, "k2": 1}
        assert await put(R, "k2") is None  # unchanged

    # -- the notification inbox -----------------------------------------------------------------

    async def test_records_are_saved_listed_searched_and_given_a_status(
        self, store: Store
    ) -> None:
        await store.ensure_thread(T, R)
        first = await save(store, notification(summary="100% done_now"), 1000.0)
        second = await save(store, notification(source="slack", summary="hello"), 1001.0)
        assert (await store.get_notification(first.id)).summary == "100% done_now"  # type: ignore[union-attr]
        assert [r.id for r in await store.list_notifications()] == [second.id, first.id]
        assert [r.id for r in await store.list_notifications(thread_id="x")] == []
        assert [r.id for r in await store.search_notifications("% DONE_")] == [first.id]
        assert await store.search_notifications("1_0") == []  # _ is no wildcard
        assert [r.id for r in await store.search_notifications("SLACK")] == [second.id]
        assert await store.set_notification_status(first.id, "seen", 2000.0)
        assert not await store.set_notification_status("missing", "seen", 2000.0)
        seen = await store.list_notifications(status="seen")
        assert [r.id for r in seen] == [first.id] and seen[0].seen_at is not None

    async def test_changes_page_on_from_their_cursor(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        ids = [(await save(store, notification(), 1000.0)).id for _ in range(5)]  # one time
        page, cursor = await store.notification_changes(None, 3)
        rest, cursor = await store.notification_changes(cursor, 3)
        assert [r.id for r in page + rest] == ids
        assert (await store.notification_changes(cursor, 3))[0] == []
        await store.set_notification_status(ids[1], "dismissed", 3000.0)
        changed, _ = await store.notification_changes(cursor, 3)
        assert [r.id for r in changed] == [ids[1]]

    async def test_a_repeat_merges_into_the_pending_record(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        rec = await save(store, notification(dedupe_key="ci-1"), 1000.0)
        found = await store.find_notification_to_merge(
            T, source="github", kind="ci", dedupe_key="ci-1", coalesce_key=None, now=1001.0)
        assert found is not None and found.id == rec.id
        merged = found.model_copy(update={"summary": "failed again", "coalesced_count": 2})
        saved = await save(store, merged, 1001.0, merge=True)
        assert saved.id == rec.id
        stored = await store.get_notification(rec.id)
        assert stored is not None and (stored.summary, stored.coalesced_count) == (
            "failed again", 2)
        assert await store.find_notification_to_merge(
            T, source="github", kind="other", dedupe_key="ci-1", coalesce_key=None,
            now=1001.0) is None

    async def test_a_merge_into_a_claimed_record_becomes_a_new_record(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        now = 1000.0
        rec = await save(store, notification(dedupe_key="d"), now, claim_token="busy",
                         claim_expires_at=now + 60)
        saved = await save(store, rec, now, merge=True)
        assert saved.id != rec.id and saved.coalesced_count == 1
        assert len(await store.list_notifications()) == 2

    async def test_due_records_are_claimed_by_one_dispatcher(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        due = datetime.fromtimestamp(1000.0, UTC)
        for _ in range(3):
            await save(store, notification(deliver_at=due), 900.0)
        await save(store, notification(deliver_at=datetime.fromtimestamp(5000.0, UTC)), 900.0)
        claims = await asyncio.gather(*(
            store.claim_due_notifications(token, due_at=1000.0, now=2000.0,
                                          expires_at=2060.0, limit=500)
            for token in ("a", "b")))
        assert sorted(len(c) for c in claims) == [0, 3]
        token = "a" if claims[0] else "b"
        ids = [r.id for r in claims[0] + claims[1]]
        assert sorted(await store.claimed_notification_ids(T, token)) == sorted(ids)
        await store.mark_notifications_delivered(ids[:1], "not-the-claimant", 2001.0)
        await store.mark_notifications_delivered(ids[:1], token, 2001.0)
        delivered = await store.get_notification(ids[0])
        assert delivered is not None and delivered.status == "delivered"
        assert delivered.delivery_attempts == 1
        await store.release_notifications(ids[1:], token)
        assert await store.claimed_notification_ids(T, token) == []

    async def test_a_summarised_record_s_delivery_waits_for_an_idle_thread(
        self, store: Store
    ) -> None:
        await store.ensure_thread(T, R)
        due = datetime.fromtimestamp(1000.0, UTC)
        plain = await save(store, notification(deliver_at=due), 900.0)
        held = await save(store, notification(deliver_at=due), 900.0, claim_token="s",
                          claim_expires_at=960.0)
        await store.mark_notifications_summarized([held.id], "s", 950.0)
        summarised = await store.get_notification(held.id)
        assert summarised is not None and summarised.summarized_at is not None
        assert await store.start_run(T, R, "busy", owner=OWNER, ttl_s=3600)

        def claim(token: str) -> Any:
            return store.claim_due_notifications(token, due_at=1000.0, now=1000.0,
                                                 expires_at=1060.0, limit=500)

        assert [r.id for r in await claim("while-busy")] == [plain.id]
        await store.finish_run(T, R, "busy", owner=OWNER, status="finished",
                               finish_reason="stop", events=[EventIn("finish")])
        assert [r.id for r in await claim("once-idle")] == [held.id]

    async def test_an_immediate_digest_claims_the_due_summaries(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        due = await save(store, notification(summary_at=datetime.fromtimestamp(900.0, UTC)),
                         800.0)
        await save(store, notification(summary_at=datetime.fromtimestamp(5000.0, UTC)), 800.0)
        await store.claim_due_summaries(T, "inline", now=1000.0, expires_at=1060.0)
        assert await store.claimed_notification_ids(T, "inline") == [due.id]

    async def test_failed_sends_back_off_then_end_as_failed(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        rec = await save(store, notification(), 900.0, claim_token="t", claim_expires_at=2000.0)
        for attempt in range(1, 4):
            await store.record_failed_delivery(
                [rec.id], "t", error="boom", now=1000.0, digest=False, max_attempts=3,
                retry_at=lambda n: 1000.0 + n)
            stored = await store.get_notification(rec.id)
            assert stored is not None and stored.delivery_attempts == attempt
            assert stored.last_delivery_error == "boom"
            if attempt < 3:
                assert stored.deliver_at == datetime.fromtimestamp(1000.0 + attempt, UTC)
                await store.claim_due_notifications("t", due_at=5000.0, now=1000.0,
                                                    expires_at=2000.0, limit=10)
        assert stored.status == "failed" and stored.failed_at is not None

    async def test_pending_counts_by_source_and_priority(self, store: Store) -> None:
        await store.ensure_thread(T, R)
        await save(store, notification(priority="high"), 900.0)
        await save(store, notification(priority="high"), 900.0)
        await save(store, notification(source="slack", priority="low"), 900.0)
        await save(store, notification(status="discarded"), 900.0)
        counts = sorted(await store.pending_notification_counts(T))
        assert counts == [("github", "high", 2), ("slack", "low", 1)]

    # -- editor overrides (issue 12) ------------------------------------------------------------

    async def test_agent_overrides_are_stored_replaced_and_removed(self, store: Store) -> None:
        assert await store.get_agent_overrides("a") is None
        await store.set_agent_overrides("a", {"instructions": "one"})
        await store.set_agent_overrides("a", {"tools": {"echo": {"description": "two"}}})
        await store.set_agent_overrides("b", {"instructions": "other agent"})
        assert await store.get_agent_overrides("a") == {"tools": {"echo": {"description": "two"}}}
        await store.set_agent_overrides("a", None)
        assert await store.get_agent_overrides("a") is None
        assert await store.get_agent_overrides("b") == {"instructions": "other agent"}

    # -- tool calls waiting for a person (issue 24) ---------------------------------------------

    async def _park(self, store: Store, run_id: str = "run-1", ttl_s: float = 15.0,
                    calls: tuple[str, ...] = ("c1",)) -> list[ApprovalIn]:
        assert await store.start_run(T, R, run_id, owner=OWNER, ttl_s=ttl_s, agent_id="agent")
        approvals = [ApprovalIn(c, "add", {"a": 1}) for c in calls]
        step = MessageIn("assistant", "", run_id, metadata={"tool_calls": []})
        await store.park_run(T, R, run_id, agent_id="agent", approvals=approvals,
                             messages=[step], events=[EventIn("tool-call-approval", {}, run_id)])
        return approvals

    async def test_a_parked_run_stores_its_calls_and_an_answer_is_refused_twice(
        self, store: Store
    ) -> None:
        first, second = await self._park(store, calls=("c1", "c2"))
        listed = await store.list_approvals()
        assert [(a.id, a.tool_call_id, a.status, a.args) for a in listed] == [
            (first.id, "c1", "pending", {"a": 1}), (second.id, "c2", "pending", {"a": 1})]
        assert [m.role for m in await store.list_messages(T)] == ["assistant"]  # same write
        assert (await store.find_approval("run-1", "c2")).id == second.id  # type: ignore[union-attr]
        answered = await store.answer_approval(first.id, approved=True, args={"a": 2},
                                               owner="cli", ttl_s=15)
        assert (answered.waiting, answered.record.answer_args) == (1, {"a": 2})
        with pytest.raises(ApprovalError, match="approved already"):
            await store.answer_approval(first.id, approved=False, owner="cli", ttl_s=15)
        with pytest.raises(ApprovalError, match="no tool call waits"):
            await store.answer_approval("nope", approved=True, owner="cli", ttl_s=15)
        assert await store.take_answers(T, "run-1") is None  # c2 still pending
        last = await store.answer_approval(second.id, approved=False, reason="no",
                                           owner="cli", ttl_s=15)
        assert last.live_run == "run-1" and last.takeover is None  # its owner lives: it goes on
        taken = await store.take_answers(T, "run-1")
        assert [(a.status, a.reason) for a in taken or []] == [
            ("approved", None), ("declined", "no")]
        assert await store.list_approvals() == []
        assert len(await store.list_approvals(status=None, thread_id=T)) == 2
        got = await store.get_approval(first.id)
        assert got is not None and got.taken_by == "run-1"

    async def test_a_parked_run_holds_its_thread_past_its_lease_until_answered(
        self, store: Store
    ) -> None:
        (approval,) = await self._park(store, ttl_s=DEAD_TTL)  # parked, then its owner died
        assert not await store.reap_expired_lease(T)
        assert not await store.start_run(T, R, "direct", owner="other", ttl_s=15)
        routed = await store.route_signal(T, R, user_signal("meanwhile"), if_active="deliver",
                                          if_idle="wake", owner="sender", ttl_s=15)
        assert routed == RouteResult("deliver", "run-1")  # kept pending for the parked run
        assert await store.stranded_threads() == []
        assert await store.rescue_outlook() == (False, None)
        assert await store.resumable_threads() == []
        answered = await store.answer_approval(approval.id, approved=True, owner="answerer",
                                               ttl_s=15, agent_id="agent")
        assert answered.takeover is not None and answered.takeover != "run-1"
        assert [a.id for a in answered.answers] == [approval.id]
        assert (await store.active_run(T)).run_id == answered.takeover  # type: ignore[union-attr]
        old = await store.get_run("run-1")
        assert old is not None and old.status == "interrupted"
        taken = await store.claim_signals(T, R, answered.takeover)
        assert [s["data"]["contents"] for s in taken] == ["meanwhile"]

    async def test_an_answered_parked_run_of_a_dead_owner_is_resumed_by_a_rescue(
        self, store: Store
    ) -> None:
        (approval,) = await self._park(store, ttl_s=DEAD_TTL)
        answered = await store.answer_approval(approval.id, approved=False, reason="no",
                                               owner="cli", ttl_s=15, agent_id="another")
        assert answered.takeover is None and answered.live_run is None  # not its agent
        assert await store.resumable_threads() == [T]
        assert (await store.rescue_outlook())[0]
        assert await store.resume_parked(T, owner="me", ttl_s=15, agent_id="another") is None
        resumed = await store.resume_parked(T, owner="me", ttl_s=15, agent_id="agent")
        assert resumed is not None and resumed[1] == R and resumed[2][0].reason == "no"
        assert await store.resumable_threads() == []
        assert await store.resume_parked(T, owner="me", ttl_s=15, agent_id="agent") is None

    async def test_a_run_that_ends_while_parked_cancels_its_calls(self, store: Store) -> None:
        (approval,) = await self._park(store)
        await store.finish_run(T, R, "run-1", owner=OWNER, status="aborted",
                               finish_reason="abort", force=True,
                               events=[EventIn("abort", {}, "run-1")])
        got = await store.get_approval(approval.id)
        assert got is not None and got.status == "cancelled"
        with pytest.raises(ApprovalError, match="cancelled already"):
            await store.answer_approval(approval.id, approved=True, owner="cli", ttl_s=15)
        assert await store.start_run(T, R, "next", owner=OWNER, ttl_s=15)  # free again

    async def test_a_parked_run_set_aside_gives_up_its_lease_and_is_taken_over(
        self, store: Store
    ) -> None:
        (approval,) = await self._park(store)
        assert await store.release_parked(T, "run-1")
        assert await store.active_run(T) is None  # given up: as if its owner had died
        assert not await store.start_run(T, R, "direct", owner="other", ttl_s=15)  # held still
        answered = await store.answer_approval(approval.id, approved=True, owner="later",
                                               ttl_s=15, agent_id="agent")
        assert answered.takeover is not None
        assert not await store.release_parked(T, "run-1")  # no longer its thread

    async def test_two_steps_of_a_run_may_park_on_calls_of_one_id(self, store: Store) -> None:
        """Some models number their calls per step: ``call_0`` twice in one run."""
        (first,) = await self._park(store, calls=("call_0",))
        await store.answer_approval(first.id, approved=True, owner=OWNER, ttl_s=15)
        assert await store.take_answers(T, "run-1") is not None
        again = ApprovalIn("call_0", "add", {"a": 2})
        await store.park_run(T, R, "run-1", agent_id="agent", approvals=[again])
        found = await store.find_approval("run-1", "call_0")
        assert found is not None and (found.id, found.status) == (again.id, "pending")
