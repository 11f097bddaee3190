"""The model of a pane's thread, as the app shows and changes it — a half of the app's door to
the core (with ``bridge.py``): which models the picker lists, whether the chosen one can run
here (its key in the environment, its runtime installed), what a run cost.

A missing key never stops the app: the pane says which variable the thread's model needs and
offers the local model instead (tests/app/test_thread_model.py).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from tui_agent.app.gc_policy import freeze_late_imports

LOCAL_MODEL = "local/smollm2"  # the embedded model: no key, no network, no cost
COSTS_KEPT = 256
_costs: dict[tuple[str, int, int], float | None] = {}
_cost_map: list[Any] = []  # litellm, once loaded whole (load_cost_map)


def model_choices(*models: Iterable[str] | str) -> list[str]:
    """The picker's list: the local model first, then each model string given (the settings'
    model, its agents', the thread's own), each once, in the order given."""
    seen: list[str] = [LOCAL_MODEL]
    for group in models:
        for model in [group] if isinstance(group, str) else group:
            # a label such as "a → b" (a fallback list) is not one model string
            if model and model not in seen and check_model_string(model) is None:
                seen.append(model)
    return seen


def check_model_string(model: str) -> str | None:
    """Why ``model`` is not a model string (one line), or None when it is one."""
    from tui_agent.errors import ConfigError
    from tui_agent.models.resolve import validate_model_spec

    text = model.strip()
    if "/" not in text or text.startswith("/") or text.endswith("/") or " " in text:
        return f"{text or 'an empty string'} is not a model string: write provider/model, " \
               "e.g. openai/gpt-4o-mini"
    try:
        validate_model_spec(text)
    except ConfigError as error:
        return str(error)
    return None


async def model_problem(model: Any) -> tuple[str, list[str]] | None:
    """What keeps ``model`` (a model string, or the agent's own model as given) from
    answering here, as (one line, the environment variables it needs), or None when it can.
    Off the event loop: naming a provider litellm knows loads litellm (seconds)."""
    if callable(model) and not hasattr(model, "stream"):
        return None  # a function of the request context: known only when a run starts
    return await asyncio.to_thread(_problem, model)


def _problem(model: Any) -> tuple[str, list[str]] | None:
    from tui_agent.errors import MissingCredentialError, TuiAgentError
    from tui_agent.models.resolve import resolve_model

    try:
        resolve_model(model).check_ready()
    except MissingCredentialError as error:
        names = " or ".join(error.variables)
        return f"{error.model} needs {names} in the environment", list(error.variables)
    except TuiAgentError as error:
        return " ".join(str(error).split())[:200], []
    return None


def run_cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The cost in USD of so many tokens on ``model``, from litellm's cost map; 0 for the local
    model; None where the map does not know the model, or litellm is not loaded yet (it is
    never imported for this: the model's warm-up loads it in the background)."""
    if model.startswith("local/"):
        return 0.0
    litellm = _cost_map[0] if _cost_map else None
    if litellm is None or not (input_tokens or output_tokens):
        return None
    key = (model, input_tokens, output_tokens)  # a pane asks at each sync: once per change
    if key not in _costs:
        if len(_costs) > COSTS_KEPT:
            _costs.clear()
        try:
            prompt, completion = litellm.cost_per_token(
                model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
            )
            _costs[key] = float(prompt + completion)
        except Exception:  # a model the map does not know
            _costs[key] = None
    return _costs[key]


async def load_cost_map() -> None:
    """Import litellm (its cost map comes with it) in a thread, once a pane shows a priced
    model; a no-op once loaded, or where it is not installed (costs stay unknown). Until it
    is loaded whole, ``run_cost`` knows nothing: a module half imported in another thread is
    never read."""
    if _cost_map:
        return
    from tui_agent.models.litellm_model import load_litellm

    imported = "litellm" not in sys.modules
    try:
        module = await asyncio.to_thread(load_litellm)
    except Exception:  # no litellm here: costs stay unknown, tokens still show
        return
    _cost_map[:] = [module]
    if imported:
        freeze_late_imports()  # litellm's ~240k objects: never walked by a collection
