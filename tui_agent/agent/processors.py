"""Input and output processors: rewrite or reject messages around the model.

A processor is any object with some of these (sync or async) methods:

- ``process_input(messages, ctx) -> messages | None`` — before each model call (None: unchanged)
- ``process_output_stream(text, ctx) -> text | None`` — each text delta before the caller sees it
  (return "" to hold it back)
- ``process_output_result(text, ctx) -> text | None`` — a step's final text

``ctx.abort(reason)`` rejects (the run fails with :class:`ProcessorError`); from
``process_output_result``, ``ctx.abort(reason, retry=True)`` asks the model to answer again,
at most ``max_processor_retries`` times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from tui_agent.errors import ProcessorError
from tui_agent.signals.limits import as_items


class RetryStep(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class ProcessorContext:
    agent: Any
    run_id: str
    request_context: Any
    processor: str

    def abort(self, reason: str, *, retry: bool = False) -> NoReturn:
        if retry:
            raise RetryStep(reason)
        raise ProcessorError(f"processor {self.processor!r} rejected the run: {reason}")


def processor_name(processor: object) -> str:
    return str(
        getattr(processor, "id", None)
        or getattr(processor, "name", None)
        or type(processor).__name__
    )


def check_processors(processors: object, what: str) -> list[Any]:
    if processors is None:
        return []
    given = as_items(processors)
    if given is None:
        raise ProcessorError(f"{what} must be a list of processors")
    methods = ("process_input", "process_output_stream", "process_output_result")
    for index, processor in enumerate(given):
        if not any(hasattr(processor, m) for m in methods):
            raise ProcessorError(
                f"{what}[{index}]: {processor!r} has none of the methods {', '.join(methods)}"
            )
    return list(given)
