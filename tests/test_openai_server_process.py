"""FakeOpenAIServerProcess: the fake server in a child process answers over real HTTP, leaving
its context stops the child, and a child that dies before its URL is an error naming its status."""

from __future__ import annotations

import json

import httpx
import pytest
from openai_server import FakeOpenAIServerProcess


def test_it_streams_from_its_own_process_and_stops_with_the_context() -> None:
    reply = {"text": "hello from the child", "rate": 200}
    with FakeOpenAIServerProcess(default_reply=reply) as server:
        child = server.process
        assert child is not None and child.poll() is None
        messages = [{"role": "user", "content": "hi"}]
        body = {"model": "gpt-test", "stream": True, "messages": messages}
        text = ""
        with (
            httpx.Client(base_url=server.base_url, timeout=10) as client,
            client.stream("POST", "/chat/completions", json=body) as response,
        ):
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    for choice in json.loads(line.removeprefix("data: "))["choices"]:
                        text += choice["delta"].get("content") or ""
        assert text == "hello from the child"
    assert child.returncode == 0  # reaped: it exited on its own once its stdin closed


def test_a_child_that_dies_before_its_url_is_a_runtime_error_naming_its_status() -> None:
    server = FakeOpenAIServerProcess(port=-1)  # the child's bind raises: it exits with 1
    with pytest.raises(RuntimeError, match="exited with status 1"):
        server.start()
    assert server.process is not None and server.process.returncode == 1
