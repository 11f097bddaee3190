"""Every error the core raises on purpose: one family, each naming what was wrong."""

from __future__ import annotations


class TuiAgentError(Exception):
    """Base of every error tui_agent raises on purpose."""


class ConfigError(TuiAgentError, ValueError):
    """The agent, a tool or an option was configured wrongly (raised before any model call)."""


class MissingCredentialError(ConfigError):
    """A provider needs a credential that the environment does not have."""

    def __init__(self, provider: str, variables: list[str], model: str) -> None:
        self.provider = provider
        self.variables = variables
        self.model = model
        names = " or ".join(variables)
        super().__init__(
            f"model {model!r} needs {names} in the environment (provider {provider!r}); "
            f"set it, or pass api_key in a model config object"
        )


class UnknownProviderError(ConfigError):
    """A model router string names a provider that neither tui_agent nor litellm knows."""


class ArgumentTypeError(ConfigError, TypeError):
    """An argument has the wrong type (a search query that is not a string, a scripted reply
    that is neither text, a dict nor an exception); a ``TypeError`` too, for callers that catch
    one."""


class ToolDefinitionError(ConfigError):
    """A tool was defined wrongly (bad schema, no execute function, ...)."""


class RequestContextError(TuiAgentError, ValueError):
    """The request context does not match the agent's request_context_schema."""


class SignalError(TuiAgentError, ValueError):
    """A signal, its target or its options are invalid; nothing was stored."""


class ModelCallError(TuiAgentError):
    """The model provider failed (HTTP error, bad response, timeout)."""

    def __init__(
        self, message: str, *, status_code: int | None = None, model: str | None = None
    ) -> None:
        self.status_code = status_code
        self.model = model
        super().__init__(message)


class ModelNotInstalledError(ConfigError):
    """The embedded local model's weights or runtime are not installed."""


class ProcessorError(TuiAgentError):
    """A processor rejected the input or output (tripwire), or retries were exhausted."""


class RunFailedError(TuiAgentError):
    """A run ended with an error; ``__cause__`` holds the original exception."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        self.run_id = run_id
        super().__init__(message)


class StoreError(TuiAgentError):
    """The store could not do what was asked (bad schema version, missing thread, ...)."""


class StoreCorruptError(StoreError):
    """The store file is not a usable database: corrupt, truncated, not SQLite, a directory."""


class LeaseLostError(StoreError):
    """A run's write was refused: the run no longer holds its thread's lease (the lease
    expired and was reaped or taken by another run). The run must stop writing at once."""


class StoreFullError(StoreError):
    """The store's disk (or quota) is full: the write was not stored."""


class ThreadBusyError(TuiAgentError):
    """A direct generate()/stream() asked for a thread that already has a live run."""


class ApprovalError(TuiAgentError, ValueError):
    """An answer to a tool call waiting for approval was refused, and nothing changed: no call
    waits under that id, it was answered already, or the edited input fails the tool's
    schema."""


class RunSetAsideError(TuiAgentError):
    """This process closed the agent while the run waited for a person's approval: the run
    stopped here without an end, its calls stay pending and its thread held, and whoever
    answers them goes on with it (a new run there)."""
