"""``tui-agent serve`` end to end in a real browser (issue 23): Debian's Chromium, headless,
driven by selenium through chromium-driver, opens the served page, types into the pane's
composer, and sees the answer; a message sent from a second process (``tui-agent send``) shows up
in the page too, with its answer. The page draws on a canvas, so what it shows is read from what
its websocket received (the app's terminal output, escape sequences removed).

Skipped, saying why, where Chromium, chromium-driver or selenium is missing (.ci/run installs
them)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTED = f"{ROOT / 'tests' / 'helpers' / 'cli_agents.py'}:scripted"
WAIT_S = 40.0
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

try:
    import selenium  # noqa: F401
except ImportError:  # pragma: no cover - the test extras install it
    SELENIUM = False
else:
    SELENIUM = True

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)"),
    pytest.mark.skipif(DRIVER is None,
                       reason="no chromedriver (apt-get install chromium-driver)"),
    pytest.mark.skipif(not SELENIUM, reason="selenium is not installed (pip install -e '.[test]')"),
    pytest.mark.timeout(120),
]

# Every byte the page's websocket receives, as text, kept in the page for the test to read.
RECORD_SOCKET = """
(() => {
  const Native = window.WebSocket;
  window.__screen = "";
  const decoder = new TextDecoder();
  window.WebSocket = function (...args) {
    const socket = new Native(...args);
    socket.addEventListener("message", (event) => {
      if (typeof event.data !== "string") {
        window.__screen += decoder.decode(event.data, {stream: true});
      }
    });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, Native);
})();
"""
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


def plain(text: str) -> str:
    return _ESCAPES.sub("", text)


class Served:
    """``tui-agent serve`` on a free port of 127.0.0.1; its URL read from its first line."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui_agent", "--no-warm", "--db", str(db), "--agent",
             SCRIPTED, "-r", "ann", "-t", "web", "serve", "--port", "0"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, env={**os.environ, "CLI_TEST_DELAY_S": "0.01"})
        self.url: list[str] = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            found = re.search(r"http://\S+", line)
            if found and not self.url:
                self.url.append(found[0])
                self.ready.set()
        self.ready.set()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path / "web.db")
    try:
        assert server.ready.wait(WAIT_S) and server.url, server.process.stderr
        yield server
    finally:
        server.stop()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--window-size=1400,900", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(str(DRIVER)))
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                               {"source": RECORD_SOCKET})
        yield driver
    finally:
        driver.quit()


def screen(driver: object) -> str:
    return plain(driver.execute_script("return window.__screen || ''"))  # type: ignore[attr-defined]


def wait_for(driver: object, text: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(  # type: ignore[arg-type]
            lambda d: text in screen(d))
    except Exception:
        tail = screen(driver)[-2000:]
        raise AssertionError(f"the page never showed {text!r}; it showed …{tail!r}") from None


def test_the_page_runs_the_app_answers_and_shows_another_process_message(
    served: Served, browser: object, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver = browser
    driver.get(served.url[0])  # type: ignore[attr-defined]
    wait_for(driver, "ann/web")
    # The terminal's keyboard is xterm's textarea; the app starts with the composer focused.
    keyboard = driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")  # type: ignore[attr-defined]
    keyboard.send_keys("hello from the browser")
    wait_for(driver, "hello from the browser")  # typed into the composer
    keyboard.send_keys(Keys.ENTER)
    # The scripted agent echoes what the model got: the text inside its sender's tag.
    wait_for(driver, "hello from the browser</user>")

    sent = subprocess.run(
        [sys.executable, "-m", "tui_agent", "--db", str(tmp_path / "web.db"), "--agent",
         SCRIPTED, "-r", "ann", "-t", "web", "send", "--new", "--as", "bob", "-q",
         "from the terminal"],
        cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=WAIT_S)
    assert sent.returncode == 0, sent.stderr
    wait_for(driver, "from the terminal")
    wait_for(driver, 'name="bob">from the terminal</user>')  # and its answer
