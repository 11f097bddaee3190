"""A line over the composer when the thread's model cannot answer here (its key is not in the
environment, its runtime is not installed): it names what is missing and offers the local
model, which needs nothing: a click on it switches the thread to it."""

from __future__ import annotations

from textual.content import Content
from textual.message import Message
from textual.widgets import Static


class ModelBanner(Static):
    DEFAULT_CSS = """
    ModelBanner {
        display: none;
        height: auto;
        padding: 0 1;
        background: $error 20%;
        color: $text;
        &.-shown { display: block; }
    }
    """

    class UseLocal(Message):
        """The banner was clicked: switch the thread to the local model."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self.problem: str | None = None

    def show_problem(self, problem: str | None, *, picker_key: str) -> None:
        """Show ``problem`` (one line; None hides the banner) and what to do about it."""
        self.problem = problem
        self.set_class(problem is not None, "-shown")
        if problem is None:
            self.update("")
            return
        self.update(Content.assemble(
            ("⚠ ", "bold $text-error"), (problem, "bold"), " — set it and restart, ",
            ("click here", "bold $text-accent"), " to use ", ("local/smollm2", "bold"),
            " (offline, no key), or ", (picker_key, "bold $text-accent"),
            " to pick another model",
        ))

    def on_click(self) -> None:
        if self.problem is not None:
            self.post_message(self.UseLocal())
