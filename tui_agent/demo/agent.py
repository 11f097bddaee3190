"""The built-in demo agent of ``tui-agent chat``: a short instruction and two harmless tools.

The local model is a 135M model: a long system prompt or a tool schema makes its plain answers
worse (with tools every reply is forced through a JSON schema), so for ``local/…`` the prompt is
one line and the tools are off unless asked for.

Its sampling settings (``LOCAL_SETTINGS``) were measured on the live demo's thread: the 12
``SCRIPT`` lines as attributed ``<user …>`` messages on one memory thread, answers in between, a
browser ``<state …>`` before each line and a ``<notification …>`` every other line (on a 2-core
machine busy with other work, the last four runs side by side: the seconds are rough). An answer is
counted degenerate when it hits ``max_tokens`` or repeats a line or a 3+-word phrase 3+ times:

- old prompt, ``max_tokens`` 400, server defaults: 10 of 14 degenerate, mean 236 tokens, 63 s;
- old prompt, ``max_tokens`` 200 (stopped early): 6 of 7 degenerate (5 at the cap), mean 184
  tokens, 36 s;
- new prompt, cap 200, ``repeat_penalty`` 1.3 over 256 tokens, temperature 0.3 (stopped early):
  4 of 4 at the cap: the penalty also hits the end-of-turn token, which is all over the prompt,
  so the model never stops;
- new prompt, cap 200, temperature 0.3, no penalty (stopped early): 0 of 9 by the count, but 9 of
  9 merely echo the asker's ``<user …>`` tag and question;
- new prompt, cap 200, temperature 0.3, ``frequency_penalty`` 0.6, ``presence_penalty`` 0.4
  (chosen): 2 of 14 degenerate (one at the cap), mean 92 tokens, 31 s. Most answers are one to
  three on-topic sentences (often with invented details); the first one echoed XML-ish tags.
"""

from __future__ import annotations

import ast
import operator
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from tui_agent.errors import ConfigError

DEMO_ID = "demo"
LOCAL_INSTRUCTIONS = (
    "You are a helpful assistant in a team chat. Reply to the last message in one or two sentences."
)
INSTRUCTIONS = (
    "You are a helpful assistant in a terminal chat that several people may share. "
    "Messages from named people arrive as <user name=\"…\" from=\"…\">…</user>; answer the "
    "person who asked. Be concise and use Markdown where it helps."
)

_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_MAX_POWER = 1000  # 10**1000 is fine; 10**10**10 would hang the process
# Results are bounded before they are computed: nested powers and long products of big numbers
# ((9**1000)**1000)**1000, 10**1000*10**1000*…) would otherwise compute for seconds or minutes.
# 4,000 digits also stays under Python's int-to-str limit, so every result can be shown.
MAX_RESULT_DIGITS = 4000
_MAX_RESULT_BITS = int(MAX_RESULT_DIGITS * 3.33)


class CalculatorInput(BaseModel):
    expression: str = Field(description="Arithmetic such as '(2 + 3) * 4 / 7' or '2 ** 10'")


class TimeInput(BaseModel):
    pass


def calculate(expression: str) -> float | int:
    """Evaluate plain arithmetic (numbers, + - * / // % **, parentheses); nothing else."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from None
    return _eval(tree.body)


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POWER:
            raise ValueError(f"exponent {right} is too large (max {_MAX_POWER})")
        _check_result_size(node.op, left, right)
        return _OPERATORS[type(node.op)](left, right)
    raise ValueError(f"only numbers and + - * / // % ** are allowed, not {ast.dump(node)[:40]}")


def _check_result_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse, before computing it, an integer result longer than MAX_RESULT_DIGITS."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return  # floats overflow (an error) instead of growing
    if isinstance(op, ast.Pow) and right > 0:
        bits = max(left.bit_length() - 1, 0) * right
    elif isinstance(op, ast.Mult):
        bits = left.bit_length() + right.bit_length() - 1
    else:
        return
    if bits > _MAX_RESULT_BITS:
        raise ValueError(f"the result would have more than {MAX_RESULT_DIGITS} digits")


def demo_tools() -> dict[str, Any]:
    from tui_agent.tools import create_tool

    return {
        "calculator": create_tool(
            id="calculator",
            description="Evaluate an arithmetic expression exactly.",
            input_schema=CalculatorInput,
            execute=lambda tool_input: calculate(tool_input.expression),
        ),
        "current_time": create_tool(
            id="current_time",
            description="The current local date and time.",
            input_schema=TimeInput,
            execute=lambda tool_input: datetime.now().astimezone().isoformat(timespec="seconds"),
        ),
    }


LOCAL_MAX_TOKENS = 200
# Standard OpenAI parameters, so litellm sends them as they are; see the module docstring.
LOCAL_SETTINGS: dict[str, Any] = {
    "max_tokens": LOCAL_MAX_TOKENS,
    "temperature": 0.3,
    "frequency_penalty": 0.6,
    "presence_penalty": 0.4,
}


def is_local(model: str) -> bool:
    return model.startswith("local/")


def build_demo_agent(model: str, *, tools: bool | None, memory: Any) -> Any:
    """The demo agent on ``model``; ``tools=None`` means: on unless the model is local."""
    from tui_agent.agent.agent import Agent

    if not isinstance(model, str) or not model:
        raise ConfigError("--model needs a router string such as 'local/smollm2'")
    use_tools = (not is_local(model)) if tools is None else tools
    # A 135M model can ramble until its context is full (minutes at ~85 tokens/s) or loop on a
    # phrase: a cap and mild penalties keep its answers short.
    settings = dict(LOCAL_SETTINGS) if is_local(model) else {}
    return Agent(
        id=DEMO_ID,
        name="demo",
        instructions=LOCAL_INSTRUCTIONS if is_local(model) else INSTRUCTIONS,
        model=model,
        tools=demo_tools() if use_tools else None,
        memory=memory,
        default_options={"model_settings": settings},
    )
