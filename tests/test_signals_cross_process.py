"""Signals across processes that share a store file: the wake race, delivery from another
process, subscriptions to a run that lives elsewhere, abort from afar, and a killed owner.

Each peer is a real process (tests/helpers/signal_peer.py) with its own Agent and
ScriptedModel on the same SQLite file, or the same PostgreSQL database (every test runs on
both). Steps are synchronised on the peers' reports (a model
call started, a signal accepted, a chunk seen), never on sleeps; timeouts are failure guards."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest
from helpers.signal_peer import Peer
from helpers.sql import dollar_params, messages_sync

R, T = "res-x", "thread-x"
THREAD = {"resource_id": R, "thread_id": T}
StartPeer = Callable[..., Peer]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the peers' store is: a SQLite file, or a PostgreSQL database of the test's own."""
    if request.param == "sqlite":
        yield str(tmp_path / "shared.db")
        return
    admin = request.getfixturevalue("pg_admin_url")
    name = pg_server.new_database_name()
    pg_server.create_database_sync(admin, name)
    try:
        yield pg_server.database_url(admin, name)
    finally:
        pg_server.drop_database_sync(admin, name)


@pytest.fixture
def start_peer(db: str) -> Iterator[StartPeer]:
    started: list[Peer] = []

    def start(**config: Any) -> Peer:
        peer = Peer({"db": db, **config})
        started.append(peer)
        return peer

    yield start
    for peer in started:
        peer.close()


def ready(*peers: Peer) -> None:
    for peer in peers:
        peer.expect("ready")


def rows(db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if db.startswith("postgresql://"):
        return pg_server.run_sync(pg_server.fetch(db, dollar_params(sql), *params))
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def is_end(run_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda c: c["run_id"] == run_id and c["type"] in ("finish", "abort", "error")


def shape(chunks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, run_id) of each chunk, consecutive text deltas counted once (the log batches
    them), plus nothing else: payloads of start differ between a stream and the log."""
    out: list[tuple[str, str]] = []
    for chunk in chunks:
        item = (chunk["type"], chunk["run_id"])
        if not (item[0] == "text-delta" and out and out[-1] == item):
            out.append(item)
    return out


def text_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta")


# -- the wake race -------------------------------------------------------------------------------


@pytest.mark.parametrize("racers", [4, 8])
def test_wake_race_has_one_winner_whose_first_call_has_every_message(
    start_peer: StartPeer, db: str, racers: int
) -> None:
    """The winner's model is held between winning the lease and its first claim: all the
    losers deliver in that window, and the one model call sees every message."""
    peers = [start_peer(name=f"p{i}", gate_resolve=True, reply="done") for i in range(racers)]
    ready(*peers)
    for index, peer in enumerate(peers):
        peer.send("send", tag=index, message=f"from p{index}", target=THREAD)
    first = [p.expect(lambda e: e["ev"] in ("resolving", "accepted")) for p in peers]
    winners = [p for p, event in zip(peers, first, strict=True) if event["ev"] == "resolving"]
    assert len(winners) == 1, first
    losers = [e for e in first if e["ev"] == "accepted"]
    assert {e["action"] for e in losers} == {"deliver"}
    winner = winners[0]
    winner.send("release_resolve")
    won = winner.expect("accepted")
    assert won["action"] == "wake"
    assert {e["run_id"] for e in losers} == {won["run_id"]}
    call = winner.expect("model-call")
    done = winner.expect("done")
    assert done["text"] == "done" and call["index"] == 0
    assert sorted(call["users"]) == sorted(f"from p{i}" for i in range(racers))
    arrival = [
        json.loads(d)["contents"] for (d,) in rows(db, "SELECT data FROM signals ORDER BY seq")
    ]
    assert call["users"] == arrival  # arrival order, each its own message
    assert not any(e["ev"] == "model-call" for p in peers for e in p.seen if p is not winner)
    assert rows(db, "SELECT COUNT(*), MIN(status) FROM runs") == [(1, "finished")]
    stored = [(m.content, m.run_id) for m in messages_sync(db, T) if m.role == "user"]
    assert sorted(stored) == sorted((f"from p{i}", won["run_id"]) for i in range(racers))


# -- delivery from another process ---------------------------------------------------------------


@pytest.mark.parametrize("by_run_id", [False, True], ids=["thread-target", "run-id-target"])
def test_a_signal_from_b_is_delivered_into_the_run_in_a(
    start_peer: StartPeer, db: str, by_run_id: bool
) -> None:
    a, b = start_peer(name="A", gate_calls=[0]), start_peer(name="B")
    ready(a, b)
    a.send("send", message="start", target=THREAD)
    run_id = a.expect("accepted")["run_id"]
    a.expect("model-call")  # A's run is inside its first step
    target = {"run_id": run_id} if by_run_id else THREAD
    b.send("send", kind="signal", message={"type": "reactive", "contents": "from B"}, target=target)
    accepted = b.expect("accepted")
    assert (accepted["action"], accepted["run_id"]) == ("deliver", run_id)
    a.send("release", index=0)
    second = a.expect("model-call")
    assert second["users"] == ["start", "<system-reminder>from B</system-reminder>"]
    assert a.expect("done")["run_id"] == run_id
    assert not any(e["ev"] == "model-call" for e in b.seen)
    assert rows(db, "SELECT status, run_id FROM signals ORDER BY seq") == [
        ("delivered", run_id),
        ("delivered", run_id),
    ]


def test_a_message_queued_from_b_runs_in_a_after_the_active_run(
    start_peer: StartPeer, db: str
) -> None:
    a, b = start_peer(name="A", gate_calls=[0]), start_peer(name="B")
    ready(a, b)
    b.send("subscribe", sub="s", target=THREAD)
    b.expect("sub-ready")
    a.send("send", message="start", target=THREAD)
    first = a.expect("accepted")["run_id"]
    a.expect("model-call")
    b.send("send", kind="queue", message="after you", target=THREAD)
    queued = b.expect("accepted")
    assert queued["action"] == "deliver" and queued["run_id"] != first
    a.send("release", index=0)
    # The lease holder starts the queued run when its own run ends: A runs B's message.
    assert a.expect("model-call")["users"] == ["start", "after you"]
    seen = b.chunks("s", is_end(queued["run_id"]))
    assert [c["type"] for c in seen if c["type"] in ("start", "finish")] == ["start", "finish"] * 2
    runs = rows(db, "SELECT id, status, started_at, ended_at FROM runs ORDER BY started_at")
    assert [(r[0], r[1]) for r in runs] == [(first, "finished"), (queued["run_id"], "finished")]
    assert runs[0][3] <= runs[1][2]  # one at a time
    assert not any(e["ev"] == "model-call" for e in b.seen)


# -- subscriptions across processes --------------------------------------------------------------


def test_a_signal_persisted_from_a_is_its_echo_alone_to_a_subscriber_in_b(
    start_peer: StartPeer, db: str
) -> None:
    """Issue 21: no empty run around it (no start/finish): the signal, with no run id, then the
    next run as it comes."""
    a, b = start_peer(name="A"), start_peer(name="B")
    ready(a, b)
    b.send("subscribe", sub="s", target=THREAD)
    b.expect("sub-ready")
    a.send("send", message="kept for later", target=THREAD, if_idle={"behavior": "persist"})
    assert a.expect("accepted")["action"] == "persist"
    a.send("send", message="now answer", target=THREAD)
    woken = a.expect("accepted")["run_id"]
    seen = b.chunks("s", is_end(woken))
    assert [(c["type"], c["run_id"]) for c in seen[:3]] == [
        ("data-user-message", None), ("start", woken), ("data-user-message", woken)]
    assert seen[0]["payload"]["contents"] == "kept for later"
    assert [c["type"] for c in seen].count("start") == 1
    assert rows(db, "SELECT COUNT(*) FROM runs") == [(1,)]


def test_subscribers_in_b_stream_a_run_in_order_from_its_start(
    start_peer: StartPeer,
) -> None:
    a, b, c = start_peer(name="A", gate_calls=[1]), start_peer(name="B"), start_peer(name="C")
    ready(a, b, c)
    a.send("send", message="first", target=THREAD)
    old_run = a.expect("accepted")["run_id"]
    a.expect("done")  # a finished run: never replayed
    b.send("subscribe", sub="early", target=THREAD)
    assert b.expect("sub-ready")["active"] is None
    a.send("send", message="second", target=THREAD, stream=True)
    run_id = a.expect("accepted")["run_id"]
    a.expect(lambda e: e["ev"] == "model-call" and e["index"] == 1)  # mid-run, in its step
    b.send("subscribe", sub="late", target=THREAD)
    assert b.expect("sub-ready")["active"] == run_id
    b.send("subscribe", sub="gone", target=THREAD)
    b.expect("sub-ready")
    b.send("unsubscribe", sub="gone")
    b.expect(lambda e: e["ev"] == "sub-end")
    c.send("send", message="from C", target=THREAD)
    assert c.expect("accepted")["run_id"] == run_id
    a.send("release", index=1)
    streamed = a.chunks("output", is_end(run_id))
    early = b.chunks("early", is_end(run_id))
    late = b.chunks("late", is_end(run_id))
    assert shape(early) == shape(late) == shape(streamed)
    assert text_of(early) == text_of(late) == text_of(streamed) == "answer 1answer 2"
    assert shape(late)[:2] == [("start", run_id), ("data-user-message", run_id)]
    echoes = [c["payload"]["contents"] for c in late if c["type"] == "data-user-message"]
    assert echoes == ["second", "from C"]
    assert all(chunk["run_id"] != old_run for chunk in early + late)
    # Only "gone" ended: the others read on past its end.
    ends = [e["sub"] for e in b.seen if e["ev"] == "sub-end"]
    assert ends == ["gone"]


def test_abort_from_b_stops_the_run_in_a_and_every_subscriber_sees_it(
    start_peer: StartPeer, db: str
) -> None:
    reply = " ".join(f"w{i}" for i in range(600))
    a = start_peer(name="A", reply=reply, chunk_size=6, delay_s=0.005)
    b, c = start_peer(name="B"), start_peer(name="C")
    ready(a, b, c)
    b.send("subscribe", sub="b", target=THREAD)
    c.send("subscribe", sub="c", target=THREAD)
    b.expect("sub-ready")
    c.expect("sub-ready")
    a.send("send", message="talk a lot", target=THREAD, stream=True)
    run_id = a.expect("accepted")["run_id"]
    b.chunks("b", lambda ch: ch["type"] == "text-delta")  # A has a partial answer by now
    b.send("abort", sub="b")
    assert b.expect("abort-result")["value"] is True
    done = a.expect("done")
    assert done["finish_reason"] == "abort"
    assert a.chunks("output", is_end(run_id))[-1]["type"] == "abort"
    for peer, sub in ((b, "b"), (c, "c")):
        end = peer.chunks(sub, is_end(run_id))[-1]
        assert (end["type"], end["run_id"]) == ("abort", run_id)
    [(content, metadata)] = rows(
        db, "SELECT content, metadata FROM messages WHERE role='assistant'"
    )
    partial = json.loads(content)
    assert partial and reply.startswith(partial) and len(partial) < len(reply)
    assert json.loads(metadata)["aborted"] is True
    assert rows(db, "SELECT status, finish_reason FROM runs") == [("aborted", "abort")]
    assert rows(db, "SELECT COUNT(*) FROM leases") == [(0,)]


# -- a dead owner ----------------------------------------------------------------------------------


def test_a_killed_owner_leaves_an_interrupted_run_and_the_next_signal_wakes(
    start_peer: StartPeer, db: str
) -> None:
    a = start_peer(name="A", ttl=1.0, gate_calls=[0])  # A's run never finishes by itself
    b = start_peer(name="B", ttl=1.0, reply="fresh start")
    ready(a, b)
    b.send("subscribe", sub="s", target=THREAD)
    b.expect("sub-ready")
    a.send("send", message="hello", target=THREAD)
    dead_run = a.expect("accepted")["run_id"]
    a.expect("model-call")
    os.kill(a.proc.pid, signal.SIGKILL)
    a.proc.wait()
    seen = b.chunks("s", lambda ch: ch["type"] == "interrupted")
    assert (seen[0]["type"], seen[0]["run_id"]) == ("start", dead_run)
    assert seen[-1]["run_id"] == dead_run
    assert rows(db, "SELECT status FROM runs WHERE id=?", (dead_run,)) == [("interrupted",)]
    b.send("send", message="anyone there?", target=THREAD)
    woken = b.expect("accepted")
    assert woken["action"] == "wake" and woken["run_id"] != dead_run
    assert b.expect("model-call")["users"] == ["hello", "anyone there?"]
    assert b.expect("done")["text"] == "fresh start"


def test_messages_pending_for_a_winner_that_died_before_its_first_call_are_not_lost(
    start_peer: StartPeer, db: str
) -> None:
    a = start_peer(name="A", ttl=1.0, gate_resolve=True)  # wins, then dies before any claim
    b = start_peer(name="B", ttl=1.0, reply="recovered")
    ready(a, b)
    b.send("subscribe", sub="s", target=THREAD)
    b.expect("sub-ready")
    a.send("send", message="from A", target=THREAD)
    a.expect("resolving")
    b.send("send", message="from B", target=THREAD)
    dead_run = b.expect("accepted")["run_id"]  # delivered to A's run
    os.kill(a.proc.pid, signal.SIGKILL)
    a.proc.wait()
    b.chunks("s", lambda ch: ch["type"] == "interrupted" and ch["run_id"] == dead_run)
    # With no further send, B (it has the agent open) takes the stranded messages over.
    assert b.expect("model-call")["users"] == ["from A", "from B"]
    rescued = b.chunks("s", lambda ch: ch["type"] == "finish")
    assert rescued[-1]["run_id"] != dead_run
    assert text_of(rescued) == "recovered"
