"""The llama.cpp server child process: one per weights file per process, started on first use.

``xllamacpp.Server`` holds the GIL for the whole model load, so loading it in a thread would
still freeze the caller's event loop; a child process (``server_child.py``) keeps an embedding
program responsive while the model loads, and llama.cpp's stderr logging never reaches a
terminal UI. The child exits when our end of its stdin closes, so it cannot outlive us.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tui_agent.errors import ModelCallError

THREADS_ENV = "TUI_AGENT_LOCAL_THREADS"
CONTEXT_SIZE = 8192  # SmolLM2's training context; the KV cache costs about 21 KB a token
_STARTUP_TIMEOUT_S = 120.0
_CHILD = Path(__file__).with_name("server_child.py")


def default_threads() -> int:
    """The settings' ``local_threads`` (``TUI_AGENT_LOCAL_THREADS``) if set, else every core
    but one (so the UI keeps one)."""
    from tui_agent.settings import current_settings

    value = current_settings().local_threads
    return max(1, (os.cpu_count() or 2) - 1) if value is None else value


@dataclass(slots=True)
class LocalServer:
    """A running llama.cpp server child: where it listens and how long it took to load."""

    process: subprocess.Popen[str]
    base_url: str  # http://127.0.0.1:PORT
    api_key: str
    threads: int
    load_seconds: float

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()  # the child deletes its server and exits
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_servers: dict[str, LocalServer] = {}  # by weights path
_servers_lock = threading.Lock()
_atexit_registered = False


def get_server(weights: Path, threads: int) -> LocalServer:
    """The server for these weights, started on first use. Blocking: call it off the loop.

    A later call with another thread count reuses the running server (one load per process).
    """
    global _atexit_registered
    key = str(weights)
    with _servers_lock:
        running = _servers.get(key)
        if running is not None and running.alive:
            return running
        running = _start_server(weights, threads)
        _servers[key] = running
        if not _atexit_registered:
            atexit.register(stop_servers)
            _atexit_registered = True
        return running


def loaded_server(weights: Path) -> LocalServer | None:
    """The running server for these weights, if any: a lock-free check for the event loop."""
    running = _servers.get(str(weights))
    return running if running is not None and running.alive else None


def stop_servers() -> None:
    """Stop every local model server this process started (also runs at exit)."""
    with _servers_lock:
        running = list(_servers.values())
        _servers.clear()
    for server in running:
        server.stop()


def _start_server(weights: Path, threads: int) -> LocalServer:
    started = time.perf_counter()
    api_key = secrets.token_hex(16)  # only our own requests reach the loopback server
    # The child's stderr goes to an unlinked temp file: read on failure, never a full pipe.
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errors:
        process = subprocess.Popen(
            _child_args(weights, threads),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,  # a Ctrl-C in the terminal is the app's, not the server's
        )
        address = _handshake(process, api_key)
        if not address:
            still_running = process.poll() is None  # alive but silent: it timed out
            process.kill()
            process.wait()
            why = (
                f"no answer within {_STARTUP_TIMEOUT_S:.0f} s"
                if still_running
                else "the server process exited"
            )
            raise ModelCallError(
                f"the local model server failed to start on {weights} ({why}): "
                f"{_tail(errors)}",
                model="local",
            )
    return LocalServer(
        process=process,
        base_url=address.rstrip("/"),
        api_key=api_key,
        threads=threads,
        load_seconds=time.perf_counter() - started,
    )


def _child_args(weights: Path, threads: int) -> list[str]:
    # The source, not the file or `-m`: the child must not depend on sys.path or tui_agent.
    source = _CHILD.read_text(encoding="utf-8")
    return [sys.executable, "-c", source, str(weights), str(threads), str(CONTEXT_SIZE)]


def _handshake(process: subprocess.Popen[str], api_key: str) -> str | None:
    """Send the key, wait for the child's address line; None if it died or said nothing."""
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(api_key + "\n")
        process.stdin.flush()
        line = _read_line(process.stdout, _STARTUP_TIMEOUT_S)
        address = json.loads(line)["address"] if line else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return str(address) if address else None


def _read_line(stream: IO[str], timeout: float) -> str:
    """One line, or "" after ``timeout`` (the reader thread ends when the child is killed)."""
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else ""


def _tail(errors: IO[str]) -> str:
    errors.seek(0)
    lines = [line.strip() for line in errors.read().splitlines() if line.strip()]
    return " | ".join(lines[-3:]) or "it wrote no error message"
