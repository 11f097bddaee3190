"""A peer process for the cross-process signal tests and benchmarks.

Run as ``python signal_peer.py '<config json>'``: it builds its own Agent on the shared store
file, with a ScriptedModel, then obeys JSON commands on stdin, one a line, and reports JSON
events on stdout, one a line. The test side is :class:`Peer` (import this module).

Config: ``db`` (a SQLite file or a ``postgresql://`` URL), ``name``, ``ttl`` (lease seconds),
``reply`` (every model answer),
``chunk_size``, ``delay_s``, ``gate_calls`` (model call indexes that wait for a ``release``),
``gate_resolve`` (the model is resolved only after ``release_resolve``: holds a woken run
between winning the lease and its first claim).

Commands: ``send`` {tag, kind: message|queue|signal, message, target, if_active, if_idle,
stream, at (a wall-clock instant to send at)}, ``subscribe`` {sub}, ``unsubscribe`` {sub},
``abort`` {sub}, ``release`` {index}, ``release_resolve``, ``exit``.

Events: ``ready``; ``accepted`` {tag, action, run_id}; ``chunk`` {src, chunk} (src is "output"
or a subscription name); ``done`` {run_id, text, finish_reason}; ``failed`` {error};
``model-call`` {index, users}; ``resolving``; ``sub-ready`` / ``sub-end`` {sub};
``abort-result`` {sub, value}; ``error`` {op, error} for a command that raised.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


# -- the peer process ----------------------------------------------------------------------------


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"ev": event, **fields}, default=str) + "\n")
    sys.stdout.flush()


class PeerProcess:
    def __init__(self, config: dict[str, Any]) -> None:
        from tui_agent import Agent, Memory
        from tui_agent.store import open_store
        from tui_agent.testing import ScriptedModel

        self.config = config
        self.gates = {int(i): asyncio.Event() for i in config.get("gate_calls", [])}
        self.resolve_gate = asyncio.Event()
        self.calls = 0
        self.scripted = ScriptedModel(
            handler=self._reply,
            chunk_size=config.get("chunk_size", 8),
            delay_s=config.get("delay_s", 0.0),
        )
        self.store = open_store(config["db"])  # a SQLite file or a postgresql:// URL
        model: Any = self._resolve if config.get("gate_resolve") else self.scripted
        self.agent = Agent(
            name=config.get("name", "peer"),
            id="peer",
            instructions="Be brief.",
            model=model,
            memory=Memory(store=self.store, lease_ttl_s=config.get("ttl", 15.0)),
        )
        self.subs: dict[str, Any] = {}
        self.tasks: set[asyncio.Task[Any]] = set()

    async def _resolve(self, context: Any) -> Any:
        emit("resolving")
        await self.resolve_gate.wait()
        return self.scripted

    async def _reply(self, messages: list[dict[str, Any]], tools: Any) -> str:
        index = self.calls
        self.calls += 1
        users = [m["content"] for m in messages if m["role"] == "user"]
        emit("model-call", index=index, users=users)
        if index in self.gates:
            await self.gates[index].wait()
        return self.config.get("reply", f"answer {index}")

    def spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def main(self) -> None:
        await self.store.fetchone("SELECT 1")  # open and migrate before saying ready
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        emit("ready", pid=os.getpid())
        while line := await reader.readline():
            command = json.loads(line)
            if command["op"] == "exit":
                break
            try:
                await self.handle(command)
            except Exception as error:  # report, keep serving
                emit("error", op=command["op"], error=f"{type(error).__name__}: {error}")
        for sub in self.subs.values():
            sub.unsubscribe()
        await self.agent.close()
        await self.store.close()

    async def handle(self, command: dict[str, Any]) -> None:
        op = command["op"]
        if op == "send" and command.get("at"):
            self.spawn(self.send_at(command))
        elif op == "send":
            self.send(command)
        elif op == "subscribe":
            sub = await self.agent.subscribe_to_thread(**command["target"])
            self.subs[command["sub"]] = sub
            self.spawn(self.forward(command["sub"], sub))
            emit("sub-ready", sub=command["sub"], active=sub.active_run_id())
        elif op == "unsubscribe":
            self.subs[command["sub"]].unsubscribe()
        elif op == "abort":
            emit("abort-result", sub=command["sub"], value=self.subs[command["sub"]].abort())
        elif op == "release":
            self.gates[int(command["index"])].set()
        elif op == "release_resolve":
            self.resolve_gate.set()
        else:
            raise ValueError(f"unknown op {op!r}")

    async def send_at(self, command: dict[str, Any]) -> None:
        """A start barrier for races: every peer sends at the same wall-clock instant."""
        await asyncio.sleep(max(0.0, command["at"] - time.time()))
        try:
            self.send(command)
        except Exception as error:
            emit("error", op="send", error=f"{type(error).__name__}: {error}")

    def send(self, command: dict[str, Any]) -> None:
        method = {
            "message": self.agent.send_message,
            "queue": self.agent.queue_message,
            "signal": self.agent.send_signal,
        }[command.get("kind", "message")]
        options = {k: command[k] for k in ("if_active", "if_idle") if k in command}
        sent = time.time()
        receipt = method(command["message"], **command["target"], **options)
        self.spawn(self.report(command.get("tag"), receipt, command.get("stream", False), sent))

    async def report(self, tag: Any, receipt: Any, stream: bool, sent: float) -> None:
        try:
            decision = await receipt.accepted
        except Exception as error:
            emit("accepted", tag=tag, action="error", error=f"{type(error).__name__}: {error}")
            return
        emit(
            "accepted",
            tag=tag,
            action=decision["action"],
            run_id=decision.get("run_id"),
            signal_id=receipt.signal.id,
            t_sent=sent,
            t=time.time(),
        )
        output = decision.get("output")
        if output is None:
            return
        async for chunk in output:
            if stream:
                emit("chunk", src="output", chunk=chunk)
        try:
            result = await output.result()
        except Exception as error:
            emit("failed", run_id=output.run_id, error=f"{type(error).__name__}: {error}")
            return
        emit("done", run_id=result.run_id, text=result.text, finish_reason=result.finish_reason)

    async def forward(self, name: str, sub: Any) -> None:
        async for chunk in sub.stream:
            emit("chunk", src=name, chunk=chunk, t=time.time())
        emit("sub-end", sub=name)


# -- the test side -------------------------------------------------------------------------------


class PeerError(AssertionError):
    pass


class Peer:
    """A running peer process, with its events read on a thread into a queue."""

    def __init__(self, config: dict[str, Any], timeout_s: float = 15.0) -> None:
        self.name = config.get("name", "peer")
        self.timeout_s = timeout_s
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "signal_peer.py"), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []  # every event read, in order
        self.backlog: list[dict[str, Any]] = []  # read but not yet taken by expect()
        self._stderr: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.put(json.loads(line))
        self.events.put(None)

    def send(self, op: str, **fields: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()

    def expect(self, match: Callable[[dict[str, Any]], bool] | str) -> dict[str, Any]:
        """The oldest event not yet taken that matches (an ``ev`` name or a predicate); the
        others stay for later calls. Fails after ``timeout_s`` (a guard: normal runs end on
        the event)."""
        predicate = (lambda e: e["ev"] == match) if isinstance(match, str) else match
        for index, event in enumerate(self.backlog):
            if predicate(event):
                return self.backlog.pop(index)
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                event = self.events.get(timeout=max(left, 0.001))
            except queue.Empty:
                raise PeerError(f"{self.name}: no matching event in {self.timeout_s}s") from None
            if event is None:
                raise PeerError(f"{self.name} exited: {self.stderr()}")
            self.seen.append(event)
            if event["ev"] == "error":
                raise PeerError(f"{self.name}: {event}")
            if predicate(event):
                return event
            self.backlog.append(event)

    def chunks(self, src: str, until: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Chunks from ``src`` up to and including the first one ``until`` accepts."""
        out: list[dict[str, Any]] = []
        while True:
            event = self.expect(lambda e: e["ev"] == "chunk" and e["src"] == src)
            out.append(event["chunk"])
            if until(event["chunk"]):
                return out

    def stderr(self) -> str:
        """The end of the process's stderr, once it has exited."""
        if self.proc.poll() is None:
            return "(still running)"
        if self._stderr is None:
            assert self.proc.stderr is not None
            self._stderr = self.proc.stderr.read()[-2000:]
        return self._stderr

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("exit")
                self.proc.wait(timeout=self.timeout_s)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.stderr()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


if __name__ == "__main__":

    async def _main() -> None:
        await PeerProcess(json.loads(sys.argv[1])).main()

    asyncio.run(_main())
