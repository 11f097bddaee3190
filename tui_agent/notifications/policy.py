"""The notification delivery policy: what happens to an inbox record when it arrives.

Resolution order: the agent's ``decide`` — the reference's ``decide(ctx)`` (``ctx["record"]`` or
``ctx.record``, ``ctx["thread_state"]``) or API.md's ``decide(record, thread_state)``, sync or
async; None falls through (tests/test_conformance.py) — then an entry for the record's source,
then for its priority, then ``default``, then the built-in table (``default_decision``). An
entry is an action string or a decision dict.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tui_agent.errors import ConfigError
from tui_agent.notifications.ports import NotifyingAgent
from tui_agent.signals.limits import as_mapping

PRIORITIES: tuple[str, ...] = ("low", "medium", "high", "urgent")
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}
ACTIONS: tuple[str, ...] = ("deliver", "summarize", "defer", "persist", "discard")
ThreadState = Literal["idle", "active"]
Action = Literal["deliver", "summarize", "defer", "persist", "discard"]

_CAMEL = {
    "deliveryPolicy": "delivery_policy",
    "summaryAt": "summary_at",
    "deliverAt": "deliver_at",
    "dispatchIntervalS": "dispatch_interval_s",
    "dispatchOnChange": "dispatch_on_change",
}


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Decision(BaseModel):
    """What to do with a record. ``summary_at``: when its digest is due (None with summarize:
    a digest at once). ``deliver_at``: when the full notification is due (after a summary: once
    the thread is idle from then on)."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    reason: str = ""
    summary_at: datetime | None = None
    deliver_at: datetime | None = None

    @field_validator("summary_at", "deliver_at")
    @classmethod
    def _aware(cls, v: datetime | None) -> datetime | None:
        return _utc(v)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


def parse_decision(value: object, where: str) -> Decision:
    """A decision from an action string, a dict or a Decision; unknown actions name themselves."""
    if isinstance(value, Decision):
        return value
    given = as_mapping({"action": value} if isinstance(value, str) else value)
    if given is None:
        raise ConfigError(
            f"{where} must be an action string or a decision dict, got {type(value).__name__}"
        )
    value = given
    camel = [f"{k!r} → {_CAMEL[k]!r}" for k in value if k in _CAMEL]
    if camel:
        raise ConfigError(f"{where} uses camelCase keys; names are snake_case: {', '.join(camel)}")
    action = value.get("action")
    if action not in ACTIONS:
        raise ConfigError(
            f"{where} has unknown action {action!r}; actions are {', '.join(ACTIONS)}"
        )
    try:
        decision = Decision(**value)
    except ValidationError as exc:
        raise ConfigError(f"{where} is not a valid decision: {exc.errors()[0]['msg']}") from None
    if decision.action == "defer" and decision.deliver_at is None:
        raise ConfigError(f"{where}: action 'defer' needs 'deliver_at' (when to deliver)")
    return decision


class DeliveryPolicy(BaseModel):
    """``Agent(notifications={"delivery_policy": {...}})``."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    default: Decision | None = None
    priorities: dict[str, Decision] = Field(default_factory=dict)
    sources: dict[str, Decision] = Field(default_factory=dict)
    decide: Callable[..., Any] | None = None


class NotificationsConfig(BaseModel):
    """``Agent(notifications=...)``: the delivery policy and the dispatcher's pace."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    delivery_policy: DeliveryPolicy = Field(default_factory=DeliveryPolicy)
    dispatch_interval_s: float = 1.0
    # Also pass as soon as another process commits (what `tui-agent notify` left due goes out
    # within milliseconds); False: only every dispatch_interval_s (tests that dispatch by hand).
    dispatch_on_change: bool = True


def _parse_entries(raw: object, where: str, keys: tuple[str, ...] | None) -> dict[str, Decision]:
    if raw is None:
        return {}
    given = as_mapping(raw)
    if given is None:
        raise ConfigError(f"{where} must be a dict, got {type(raw).__name__}")
    out: dict[str, Decision] = {}
    for key, entry in given.items():
        if keys is not None and key not in keys:
            raise ConfigError(f"unknown priority {key!r} in {where}; priorities: {PRIORITIES}")
        out[str(key)] = parse_decision(entry, f"{where}[{key!r}]")
    return out


def parse_delivery_policy(raw: object) -> DeliveryPolicy:
    if raw is None:
        return DeliveryPolicy()
    if isinstance(raw, DeliveryPolicy):
        return raw
    given = as_mapping(raw)
    if given is None:
        raise ConfigError(f"delivery_policy must be a dict, got {type(raw).__name__}")
    raw = given
    allowed = {"default", "priorities", "sources", "decide"}
    extra: set[Any] = set(raw) - allowed
    if extra:
        raise ConfigError(
            f"unknown key(s) {sorted(extra)} in delivery_policy; allowed: {sorted(allowed)}"
        )
    decide = raw.get("decide")
    if decide is not None and not callable(decide):
        raise ConfigError(
            "delivery_policy.decide must be a function: decide(ctx) with ctx['record'] and "
            "ctx['thread_state'], or decide(record, thread_state)"
        )
    default = raw.get("default")
    return DeliveryPolicy(
        default=None if default is None else parse_decision(default, "delivery_policy.default"),
        priorities=_parse_entries(raw.get("priorities"), "delivery_policy.priorities",
                                  PRIORITIES),
        sources=_parse_entries(raw.get("sources"), "delivery_policy.sources", None),
        decide=decide,
    )


def parse_notifications_config(raw: object) -> NotificationsConfig:
    """The agent's ``notifications=`` argument (None, a dict or a NotificationsConfig)."""
    if raw is None:
        return NotificationsConfig()
    if isinstance(raw, NotificationsConfig):
        return raw
    given = as_mapping(raw)
    if given is None:
        raise ConfigError(f"notifications must be a dict, got {type(raw).__name__}")
    raw = given
    camel = [f"{k!r} → {_CAMEL[k]!r}" for k in raw if k in _CAMEL]
    extra: set[Any] = set(raw) - {"delivery_policy", "dispatch_interval_s", "dispatch_on_change"}
    if extra:
        hint = f" (names are snake_case: {', '.join(camel)})" if camel else ""
        raise ConfigError(
            f"unknown key(s) {sorted(extra)} in notifications; allowed: delivery_policy, "
            f"dispatch_interval_s, dispatch_on_change{hint}"
        )
    interval = raw.get("dispatch_interval_s", 1.0)
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
        raise ConfigError(f"notifications.dispatch_interval_s must be > 0, got {interval!r}")
    on_change = raw.get("dispatch_on_change", True)
    if not isinstance(on_change, bool):
        raise ConfigError(f"notifications.dispatch_on_change must be True or False, got "
                          f"{on_change!r}")
    return NotificationsConfig(
        delivery_policy=parse_delivery_policy(raw.get("delivery_policy")),
        dispatch_interval_s=float(interval), dispatch_on_change=on_change,
    )


def agent_config(agent: NotifyingAgent) -> NotificationsConfig:
    """The parsed ``notifications=`` of an agent (an ``Agent`` caches it: its
    ``notifications_config``; anything else is parsed each time)."""
    config = getattr(agent, "notifications_config", None)
    if isinstance(config, NotificationsConfig):
        return config
    return parse_notifications_config(getattr(agent, "notifications", None))


def default_decision(priority: str, thread_state: str, now: datetime) -> Decision:
    """The built-in table: priority × idle/active, each with its reason."""
    if priority == "urgent":
        return Decision(action="deliver", reason=f"urgent: delivered at once ({thread_state})")
    if priority == "low":
        return Decision(action="summarize", summary_at=now,
                        reason=f"low: summarised in the next digest ({thread_state})")
    if thread_state == "idle":
        return Decision(action="deliver", reason=f"{priority} on an idle thread: delivered")
    if priority == "high":
        return Decision(action="summarize", deliver_at=now,
                        reason="high on an active thread: a summary now, the full notification "
                               "once the thread is idle")
    return Decision(action="summarize", summary_at=now,
                    reason="medium on an active thread: summarised in the next digest")


def with_reason(decision: Decision, reason: str) -> Decision:
    """``decision``, or its copy with ``reason`` if it gives none (what :func:`decide`
    returns for a policy entry)."""
    return decision if decision.reason else decision.model_copy(update={"reason": reason})


_with_reason = with_reason


def fixed_entry(policy: DeliveryPolicy, source: str) -> tuple[Decision, str] | None:
    """The policy entry :func:`decide` takes for any record of ``source`` on any thread, when
    that reads neither the record's priority nor the thread's state (no ``decide()``; an entry
    for the source, or a default and no per-priority entries): (the entry, the reason
    :func:`decide` gives it, see :func:`with_reason`). None when the decision depends on
    more."""
    if policy.decide is not None:
        return None
    if source in policy.sources:
        return policy.sources[source], f"delivery_policy.sources[{source!r}]"
    if policy.priorities or policy.default is None:
        return None
    return policy.default, "delivery_policy.default"


async def decide(
    policy: DeliveryPolicy, record: Any, thread_state: str, now: datetime | None = None
) -> Decision:
    """The decision for ``record`` on a thread that is ``thread_state`` ("idle"/"active")."""
    now = now or datetime.now(UTC)
    if policy.decide is not None:
        if _takes_one_argument(policy.decide):  # the reference's decide({record, ...})
            result = policy.decide(DecideContext(record=record, thread_state=thread_state, now=now))
        else:
            result = policy.decide(record, thread_state)
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            return _with_reason(parse_decision(result, "delivery_policy.decide() result"),
                                "delivery_policy.decide()")
    if record.source in policy.sources:
        return _with_reason(policy.sources[record.source],
                            f"delivery_policy.sources[{record.source!r}]")
    if record.priority in policy.priorities:
        return _with_reason(policy.priorities[record.priority],
                            f"delivery_policy.priorities[{record.priority!r}]")
    if policy.default is not None:
        return _with_reason(policy.default, "delivery_policy.default")
    return default_decision(record.priority, thread_state, now)


class DecideContext(dict[str, Any]):
    """What the reference's one-argument ``decide(ctx)`` gets: ``record``, ``thread_state``
    ("idle"/"active") and ``now``, readable as keys or as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    """True for ``decide(ctx)``; False for API.md's ``decide(record, thread_state)`` (and for
    anything whose signature cannot be read)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if any(p.kind is p.VAR_POSITIONAL for p in positional):
        return False
    required = [p for p in positional if p.default is p.empty]
    return len(required) == 1 and len(positional) == 1
