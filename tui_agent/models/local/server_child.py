"""The llama.cpp server child process: loads the weights, serves, exits when stdin closes.

``server.py`` runs this file's source with ``python -c`` (arguments: weights path, thread count,
context size). It imports nothing from tui_agent, so it works whatever sys.path the parent had.
The API key comes on stdin, not argv, which other users can see. The first stdout line is the
address as JSON; then the child holds the server until the parent closes its end of stdin, so it
cannot outlive the parent even if the parent is killed.
"""

import importlib
import json
import signal
import sys
from typing import Any


def main() -> None:
    # Ctrl-C is the parent's to handle (it also starts us in a session of our own).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # only now: loading llama.cpp takes a while (compiled, without type stubs: Any)
    xllamacpp: Any = importlib.import_module("xllamacpp")

    path, threads, n_ctx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    key = sys.stdin.readline().strip()
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = 0
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # any free port; the address line tells the parent which
    params.api_keys = [key]
    server = xllamacpp.Server(params)
    print(json.dumps({"address": server.listening_address}), flush=True)
    sys.stdin.read()  # returns when the parent closes stdin or dies
    del server  # stop it here, not in interpreter teardown


if __name__ == "__main__":
    main()
