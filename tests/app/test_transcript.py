"""The transcript model without a screen: history and live events become entries once each."""

from __future__ import annotations

import gc
import weakref
from datetime import UTC, datetime
from typing import Any

from tui_agent.app.transcript import Transcript
from tui_agent.store.records import MessageRecord

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def record(id_: str, role: str, content: Any, run_id: str | None = None,
           **metadata: Any) -> MessageRecord:
    return MessageRecord(id=id_, thread_id="t", resource_id="r", role=role, content=content,
                         run_id=run_id, metadata=metadata, created_at=NOW)


def event(type_: str, run_id: str | None = "run1", **payload: Any) -> dict[str, Any]:
    return {"type": type_, "run_id": run_id, "from": "AGENT", "payload": payload}


def user_signal(id_: str, text: str, **attributes: str) -> dict[str, Any]:
    return {"id": id_, "type": "user", "contents": text, "attributes": attributes}


def test_history_turns_stored_messages_into_entries_with_tool_results_attached() -> None:
    transcript = Transcript(agent_id="helper")
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    transcript.load_history([
        record("m1", "user", "<user name=\"Ana\">hi</user>", "run1",
               signal=user_signal("s1", "hi", name="Ana", **{"from": "slack"})),
        record("m2", "assistant", None, "run1", tool_calls=[call]),
        record("m3", "tool", "2", "run1", tool_call_id="c1"),
        record("m4", "assistant", "It is 2.", "run1"),
        record("m5", "assistant", "half an answ", "run2", aborted=True),
    ])
    entries = transcript.entries
    assert [e.kind for e in entries] == ["user", "tool", "assistant", "assistant"]
    assert (entries[0].author, entries[0].source, entries[0].text) == ("Ana", "slack", "hi")
    assert (entries[1].tag, entries[1].args, entries[1].result, entries[1].status) == (
        "add", {"a": 1}, 2, "ok")
    assert entries[2].author == "helper" and entries[3].status == "aborted"
    assert transcript.first_message_id() == "m1"


def test_live_events_stream_text_and_close_it_at_the_step_end() -> None:
    transcript = Transcript()
    transcript.apply(event("start", agent_id="demo"))
    transcript.apply(event("data-user-message", **user_signal("s1", "question")))
    for piece in ["\n", "Hel", "lo"]:
        transcript.apply(event("text-delta", text=piece))
    answer = transcript.entries[-1]
    assert (answer.kind, answer.text, answer.status, answer.author) == (
        "assistant", "Hello", "streaming", "demo")
    transcript.apply(event("step-finish"))
    transcript.apply(event("finish", usage={"input_tokens": 7, "output_tokens": 3}))
    assert answer.status == "done"
    assert transcript.last_ended is not None and transcript.last_ended.output_tokens == 3


def test_a_replayed_run_replaces_what_history_had_of_it_and_echoes_are_not_doubled() -> None:
    transcript = Transcript()
    transcript.load_history([
        record("m0", "user", "older", "run0", signal=user_signal("s0", "older")),
        record("m1", "user", "q", "run1", signal=user_signal("s1", "q")),
    ])
    transcript.take_changes()  # mounted
    transcript.apply(event("data-user-message", "run0", **user_signal("s0", "older")))
    assert [e.text for e in transcript.entries] == ["older", "q"]  # already shown: skipped
    transcript.apply(event("start"))  # run1 is replayed from its start
    transcript.apply(event("data-user-message", **user_signal("s1", "q")))
    transcript.apply(event("text-delta", text="a"))
    assert [e.text for e in transcript.entries] == ["older", "q", "a"]
    changes = transcript.take_changes()
    assert [e.text for e in changes.removed] == ["q"]  # the history copy's widget goes


def test_run_ends_are_marked_and_a_failure_keeps_the_partial_text() -> None:
    transcript = Transcript()
    transcript.apply(event("start"))
    transcript.apply(event("text-delta", text="partial"))
    transcript.apply(event("error", error="provider said no"))
    answer, marker = transcript.entries
    assert (answer.text, answer.status) == ("partial", "failed")
    assert (marker.kind, marker.status, marker.text) == ("marker", "failed", "provider said no")
    assert transcript.runs["run1"].status == "failed"


def test_pruning_keeps_a_live_answer_and_reports_what_was_dropped() -> None:
    transcript = Transcript()
    transcript.load_history([record(f"m{i}", "user", f"m{i}") for i in range(5)])
    transcript.apply(event("start"))
    transcript.apply(event("text-delta", text="live"))
    transcript.take_changes()
    assert transcript.prune_to(2) == 4
    assert [e.text for e in transcript.entries] == ["m4", "live"]
    assert [e.text for e in transcript.take_changes().removed] == ["m0", "m1", "m2", "m3"]
    assert transcript.prune_to(0) == 1  # "m4" goes; the live answer never does
    assert [e.text for e in transcript.entries] == ["live"]


def test_new_entries_wait_while_the_view_is_scrolled_up() -> None:
    transcript = Transcript()
    transcript.apply(event("data-signal", None, id="x", type="reactive", contents="ping"))
    held = transcript.take_changes(with_added=False)
    assert held.added == [] and transcript.waiting == 1
    assert [e.text for e in transcript.take_changes().added] == ["ping"]
    assert transcript.waiting == 0


def test_pruning_also_bounds_the_text_kept_so_long_answers_do_not_pile_up() -> None:
    transcript = Transcript()
    transcript.load_history([record(f"m{i}", "user", str(i) * 1000) for i in range(10)])
    transcript.take_changes()
    assert transcript.prune_to(60, max_chars=3500) == 7  # three of 1,000 characters fit
    assert [e.text[0] for e in transcript.entries] == ["7", "8", "9"]
    assert transcript.prune_to(60, max_chars=10) == 2  # never the newest entry
    assert [e.text[0] for e in transcript.entries] == ["9"]


def test_a_pruned_tool_call_is_let_go_and_its_late_result_changes_nothing() -> None:
    transcript = Transcript()
    for i in range(5):
        transcript.apply(event("tool-call", f"run{i}", tool_call_id=f"c{i}", tool_name="add",
                               args={"a": i}))
        transcript.apply(event("tool-result", f"run{i}", tool_call_id=f"c{i}", result=i))
    first = weakref.ref(transcript.entries[0])
    transcript.take_changes()
    assert transcript.prune_to(2) == 3
    transcript.take_changes()
    transcript.apply(event("tool-result", "run0", tool_call_id="c0", result="late"))
    assert transcript.take_changes().changed == []
    gc.collect()
    assert first() is None  # nothing keeps the pruned call (its arguments, its result)


def test_the_runs_of_pruned_answers_are_let_go_the_live_and_last_ones_kept() -> None:
    """A pane that streams for hours showed thousands of runs: the transcript keeps what the
    header needs of a run only while the run has entries, is live, or is the last one."""
    transcript = Transcript()
    for i in range(6):
        transcript.apply(event("start", f"run{i}", agent_id="demo"))
        transcript.apply(event("text-delta", f"run{i}", text=f"answer {i}"))
        transcript.apply(event("finish", f"run{i}", usage={"input_tokens": 1}))
    transcript.apply(event("start", "live", agent_id="demo"))  # live, nothing shown yet
    transcript.take_changes()
    assert transcript.prune_to(2) == 4
    assert set(transcript.runs) == {"run4", "run5", "live"}
    assert transcript.last_ended is not None and transcript.last_ended.run_id == "run5"
    assert transcript.runs["run5"].input_tokens == 1
