"""The chunks of a run's stream and of a thread's event log: their types, sources and payloads.

One place for what a reader of ``{"type", "run_id", "from", "payload"}`` may see (API.md,
"generate() and stream()" and "subscribe_to_thread"): each type as a named constant and a
``Literal``, a ``TypedDict`` per payload, a ``TypedDict`` per chunk (``Chunk`` is their union,
tagged by ``type``, so a type checker narrows ``chunk["payload"]`` after ``chunk["type"] ==
TEXT_DELTA``), and the types that end a run, once. Plain data, no imports of the package: the
lowest layer, every layer may use it (tests/test_layers.py). Checked by tests/test_events.py.
"""

# No ``from __future__ import annotations``: with string annotations Python 3.11 cannot see
# ``NotRequired`` and would list every key in ``__required_keys__``.
from typing import Any, Final, Literal, NotRequired, TypeAlias, TypedDict, get_args

# -- types ------------------------------------------------------------------------------------

START: Final = "start"
STEP_START: Final = "step-start"
TEXT_DELTA: Final = "text-delta"
TOOL_CALL: Final = "tool-call"
TOOL_RESULT: Final = "tool-result"
# The run stopped before executing a tool call that needs a person's approval (issue 24): it
# waits, the call stored, until someone approves or declines it (Agent.approve_tool_call).
TOOL_CALL_APPROVAL: Final = "tool-call-approval"
STEP_FINISH: Final = "step-finish"
FINISH: Final = "finish"
ERROR: Final = "error"
ABORT: Final = "abort"
INTERRUPTED: Final = "interrupted"  # written by the store: the run's owner died (lease expired)
DATA_USER_MESSAGE: Final = "data-user-message"  # the echo of a user signal
DATA_SIGNAL: Final = "data-signal"  # the echo of any other signal
# Written by the store: messages of the thread were marked superseded (a retried answer, an
# edited message); they stay in its history, and no model sees them again.
DATA_SUPERSEDED: Final = "data-superseded"

EndType: TypeAlias = Literal["finish", "abort", "error", "interrupted"]
EchoType: TypeAlias = Literal["data-user-message", "data-signal"]
ChunkType: TypeAlias = Literal[
    "start", "step-start", "text-delta", "tool-call", "tool-result", "step-finish",
    EndType, EchoType, "data-superseded", "tool-call-approval",
]

END_TYPES: Final[frozenset[str]] = frozenset(get_args(EndType))
"""The types after which a run says no more (the last chunk of every run)."""
CHUNK_TYPES: Final[tuple[str, ...]] = get_args(ChunkType)

# -- sources (the ``from`` key) -----------------------------------------------------------------

FROM_AGENT: Final = "AGENT"
FROM_USER: Final = "USER"
FROM_SYSTEM: Final = "SYSTEM"
Source: TypeAlias = Literal["AGENT", "USER", "SYSTEM"]


def echo_type(signal_type: str) -> EchoType:
    """The chunk type of a signal's echo: a user message's own, one for every other type."""
    return DATA_USER_MESSAGE if signal_type == "user" else DATA_SIGNAL


def echo_source(signal_type: str) -> Source:
    """The ``from`` of a signal's echo: people send user messages, the rest is the system's."""
    return FROM_USER if signal_type == "user" else FROM_SYSTEM


# -- payloads ---------------------------------------------------------------------------------


class UsagePayload(TypedDict):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class StartPayload(TypedDict, total=False):
    """A run's own ``start`` has ``run_id`` and ``agent_id`` (and the thread, with memory); the
    store's has ``agent_id`` only. ``persisted``: in logs written before issue 21, the empty
    run a persisted signal's echo was wrapped in (now the echo stands alone, run id None)."""

    run_id: str
    agent_id: str | None
    thread_id: str
    resource_id: str
    persisted: bool


class StepStartPayload(TypedDict):
    step: int


class TextDeltaPayload(TypedDict):
    text: str


class ToolCallPayload(TypedDict):
    tool_call_id: str
    tool_name: str
    args: Any  # the parsed arguments, or the raw text when they were not JSON


class ToolCallApprovalPayload(TypedDict):
    approval_id: str  # the store's id of the waiting call (tui-agent approve ID)
    tool_call_id: str
    tool_name: str
    args: Any


class ToolResultPayload(TypedDict):
    tool_call_id: str
    tool_name: str
    args: Any
    result: Any  # with ``is_error``: ``{"error": message}``
    is_error: bool


class StepFinishPayload(TypedDict):
    step: int
    finish_reason: str
    usage: UsagePayload


class FinishPayload(TypedDict):
    """``usage`` and ``text`` come from a run; ``persisted`` instead ends the empty run of a
    persisted signal in logs written before issue 21."""

    finish_reason: str
    usage: NotRequired[UsagePayload]
    text: NotRequired[str]
    persisted: NotRequired[bool]


class AbortPayload(TypedDict):
    finish_reason: str  # "abort"
    text: str  # the partial answer (kept in memory, marked aborted)


class ErrorPayload(TypedDict):
    error: str  # "ExceptionType: message"
    finish_reason: str  # "error"


class InterruptedPayload(TypedDict):
    reason: str  # "interrupted"
    detail: str


class SignalPayload(TypedDict):
    """A signal's echo: the signal as sent (``Signal``'s JSON, with the attributes of the
    branch taken). A run's own input messages echo with ``id``, ``type`` and ``contents``."""

    id: str
    type: str
    contents: str | list[dict[str, Any]]
    tag_name: NotRequired[str | None]
    attributes: NotRequired[dict[str, Any]]
    metadata: NotRequired[dict[str, Any]]
    provider_options: NotRequired[dict[str, Any]]
    created_at: NotRequired[str]


class SupersededPayload(TypedDict):
    """Messages marked superseded (``Memory.supersede``): their ids, what superseded them (a
    retry's run id, or ``"edit"``), the runs that wrote them and the signals they came from."""

    message_ids: list[str]
    by: str
    run_ids: list[str]
    signal_ids: list[str]


# -- chunks -------------------------------------------------------------------------------------

# ``from`` is a keyword: the shared keys take the functional form. ``seq`` is the event log's
# position, on chunks read from a thread's log (``subscribe_to_thread``).
_ChunkBase = TypedDict(
    "_ChunkBase", {"run_id": str | None, "from": Source, "seq": NotRequired[int]}
)


class StartChunk(_ChunkBase):
    type: Literal["start"]
    payload: StartPayload


class StepStartChunk(_ChunkBase):
    type: Literal["step-start"]
    payload: StepStartPayload


class TextDeltaChunk(_ChunkBase):
    type: Literal["text-delta"]
    payload: TextDeltaPayload


class ToolCallChunk(_ChunkBase):
    type: Literal["tool-call"]
    payload: ToolCallPayload


class ToolCallApprovalChunk(_ChunkBase):
    type: Literal["tool-call-approval"]
    payload: ToolCallApprovalPayload


class ToolResultChunk(_ChunkBase):
    type: Literal["tool-result"]
    payload: ToolResultPayload


class StepFinishChunk(_ChunkBase):
    type: Literal["step-finish"]
    payload: StepFinishPayload


class FinishChunk(_ChunkBase):
    type: Literal["finish"]
    payload: FinishPayload


class AbortChunk(_ChunkBase):
    type: Literal["abort"]
    payload: AbortPayload


class ErrorChunk(_ChunkBase):
    type: Literal["error"]
    payload: ErrorPayload


class InterruptedChunk(_ChunkBase):
    type: Literal["interrupted"]
    payload: InterruptedPayload


class SupersededChunk(_ChunkBase):
    type: Literal["data-superseded"]
    payload: SupersededPayload


class EchoChunk(_ChunkBase):
    type: EchoType
    payload: SignalPayload


Chunk: TypeAlias = (
    StartChunk | StepStartChunk | TextDeltaChunk | ToolCallChunk | ToolResultChunk
    | StepFinishChunk | FinishChunk | AbortChunk | ErrorChunk | InterruptedChunk | EchoChunk
    | SupersededChunk | ToolCallApprovalChunk
)
"""Any chunk of a stream or a thread's log."""


def is_end(chunk: dict[str, Any] | Chunk) -> bool:
    """True for the chunk that ends a run (``finish``, ``abort``, ``error``, ``interrupted``)."""
    return chunk.get("type") in END_TYPES
