"""A real browser for tests: headless Chromium driven through its DevTools protocol.

The protocol runs over a pipe (`--remote-debugging-pipe`: Chromium reads commands on its
descriptor 3 and writes answers and events on descriptor 4, each message one JSON text ended
by a NUL byte), so no port is opened and no WebSocket library is needed. One page is opened and
attached in flat mode; every command to it carries its session id.

What a test sees is what a user would: input arrives as mouse and keyboard events
(`Input.dispatch*`), files come through the file chooser's element, dialogs (`confirm`,
`alert`, `prompt`) are recorded and accepted, downloads land in a folder of the test's, and
uncaught exceptions and `console.error` lines are collected so a test can assert there were
none.
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_path():
    """The browser to drive: $RTDB_CHROMIUM, else the first of CANDIDATES on PATH, else None."""
    named = os.environ.get("RTDB_CHROMIUM")
    if named:
        return named
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_or_skip():
    """The browser's path, or the test is skipped with the reason on its line."""
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium on PATH: the viewer's browser tests need Debian's chromium "
                    "(scripts/install-test-tools installs it)")
    return path


class BrowserError(Exception):
    pass


class BrowserDidNotStart(BrowserError):
    """Chromium ended (or never answered) before its first answer: the machine, not a page."""


def short_temporary_directory():
    """A new private directory under /tmp when there is one (a short path), else under $TMPDIR."""
    for parent in ("/tmp", None):
        try:
            return tempfile.mkdtemp(prefix="rtdb-cr-", dir=parent)
        except OSError:
            continue
    raise BrowserError("no writable temporary directory for Chromium")


class Browser:
    @classmethod
    def start(cls, download_dir=None, width=1280, height=900, timeout=30):
        """A started browser. One that dies before its first answer is started once more; one
        that cannot start twice skips the test with Chromium's own words (its exit status and
        the end of its log), unless RTDB_REQUIRE_BROWSER is set, which makes that a failure."""
        executable = chromium_or_skip()
        failures = []
        for _ in range(2):
            try:
                return cls(executable, download_dir, width, height, timeout)
            except BrowserDidNotStart as failure:
                failures.append(str(failure))
        reason = f"{executable} is installed but could not start here: " + " | then: ".join(failures)
        if os.environ.get("RTDB_REQUIRE_BROWSER"):
            raise BrowserError(reason)
        pytest.skip(reason)

    def __init__(self, executable, download_dir, width, height, timeout):
        # Everything of this browser's lives in one directory with a short path: Chromium puts
        # its single-instance socket under $TMPDIR, and a socket's path may not pass 107 bytes,
        # so a long $TMPDIR (as CI systems set) makes it exit at once.
        self.home = short_temporary_directory()
        self.profile = os.path.join(self.home, "profile")
        self.log_path = os.path.join(self.home, "chromium.log")
        os.mkdir(self.profile)
        self.download_dir = download_dir
        self.dialogs = []
        self.console_errors = []
        self._events = []
        self._answers = {}
        self._next_id = 0
        self._lock = threading.Condition()
        self._send_lock = threading.Lock()
        self._closed = False
        self._session = None
        self._next_answered = 0

        # Chromium's end of each pipe goes to descriptors 3 and 4 by the shell's redirections,
        # through 10 and 11 first: the pipes may themselves be descriptors 3 to 6.
        commands_read, self._commands = os.pipe()
        self._answers_fd, answers_write = os.pipe()
        args = [executable, "--headless=new", "--remote-debugging-pipe", "--no-first-run",
                "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--no-sandbox",
                "--disable-dev-shm-usage", "--mute-audio", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "about:blank"]
        script = (f'exec 10<&{commands_read} 11>&{answers_write}; exec {commands_read}<&- {answers_write}>&-; '
                  'exec 3<&10 4>&11 10<&- 11>&-; exec "$@"')
        # Chromium's log goes to a file, read back when it fails; RTDB_CHROMIUM_LOG shows it live.
        log = None if os.environ.get("RTDB_CHROMIUM_LOG") else open(self.log_path, "wb")
        self.process = subprocess.Popen(["bash", "-c", script, "chromium"] + args,
                                        pass_fds=(commands_read, answers_write),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=log, env=dict(os.environ, TMPDIR=self.home),
                                        start_new_session=True)
        if log:
            log.close()
        os.close(commands_read)
        os.close(answers_write)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self._attach(width, height, timeout)
        except Exception as failure:
            answered = bool(self._next_answered)
            status = self._exit_status()
            said = self._log_tail()
            self.close()
            if not answered:
                raise BrowserDidNotStart(f"{failure}; {status}; its log ends: {said or '(empty)'}") from None
            raise

    # -- the protocol --------------------------------------------------------------------------

    def _read(self):
        pending = b""
        while True:
            try:
                chunk = os.read(self._answers_fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                return
            pending += chunk
            while b"\0" in pending:
                text, pending = pending.split(b"\0", 1)
                self._dispatch(json.loads(text))

    def _dispatch(self, message):
        if "id" in message:
            with self._lock:
                self._next_answered += 1
                self._answers[message["id"]] = message
                self._lock.notify_all()
            return
        method = message.get("method", "")
        params = message.get("params", {})
        if method == "Page.javascriptDialogOpening":
            self.dialogs.append((params.get("type"), params.get("message")))
            answer = {"accept": True}
            if params.get("type") == "prompt":
                answer["promptText"] = params.get("defaultPrompt", "")
            self._post("Page.handleJavaScriptDialog", answer, message.get("sessionId"))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text")
            self.console_errors.append(f"uncaught: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.console_errors.append("console.error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        with self._lock:
            self._events.append(message)
            self._lock.notify_all()

    def _post(self, method, params=None, session=None):
        with self._send_lock:
            self._next_id += 1
            number = self._next_id
            message = {"id": number, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        return number

    def command(self, method, params=None, timeout=30, browser_level=False):
        """Sends one command (to the page unless browser_level) and returns its result."""
        number = self._post(method, params, None if browser_level else self._session)
        deadline = time.monotonic() + timeout
        with self._lock:
            while number not in self._answers:
                if self._closed:
                    raise BrowserError(f"Chromium went away during {method}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserError(f"no answer to {method} in {timeout} s")
                self._lock.wait(left)
            answer = self._answers.pop(number)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def _attach(self, width, height, timeout):
        targets = self.command("Target.getTargets", browser_level=True, timeout=timeout)["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        target = page["targetId"] if page else \
            self.command("Target.createTarget", {"url": "about:blank"}, browser_level=True)["targetId"]
        self._session = self.command("Target.attachToTarget", {"targetId": target, "flatten": True},
                                     browser_level=True)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "DOM.enable"):
            self.command(domain)
        self.command("Emulation.setDeviceMetricsOverride",
                     {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        if self.download_dir:
            self.command("Browser.setDownloadBehavior",
                         {"behavior": "allow", "downloadPath": self.download_dir}, browser_level=True)

    # -- what tests use --------------------------------------------------------------------------

    def open(self, url, timeout=15):
        """Navigates to url and waits for its load event."""
        with self._lock:
            self._events.clear()
        result = self.command("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"cannot open {url}: {result['errorText']}")
        self._wait_event("Page.loadEventFired", timeout)

    def _wait_event(self, method, timeout):
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for e in self._events:
                    if e.get("method") == method:
                        self._events.remove(e)
                        return e
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise BrowserError(f"no {method} in {timeout} s")
                self._lock.wait(left)

    def eval(self, expression, timeout=30):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.command("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                   "returnByValue": True, "userGesture": True},
                              timeout=timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"{expression[:80]!r} threw: {text}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression, timeout=5, interval=0.02):
        """Polls a JavaScript expression until its value is truthy in Python's sense; returns
        it. An element comes back as {} (falsy): test for one with `!!document.querySelector(…)`."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.eval(expression)
            except BrowserError as e:
                last = e
            if last and not isinstance(last, BrowserError):
                return last
            time.sleep(interval)
        raise BrowserError(f"waited {timeout} s for {expression!r}; last: {last!r}")

    def _center(self, selector):
        box = self.eval(f"""(() => {{
            const e = document.querySelector({json.dumps(selector)});
            if (!e) return null;
            e.scrollIntoView({{block: 'center', inline: 'center'}});
            const r = e.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height];
        }})()""")
        if not box:
            raise BrowserError(f"nothing matches {selector!r}")
        if box[2] == 0 or box[3] == 0:
            raise BrowserError(f"{selector!r} is not visible")
        return box[0], box[1]

    def click(self, selector):
        """A mouse click in the middle of the first element matching selector."""
        x, y = self._center(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.command("Input.dispatchMouseEvent",
                         {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def type(self, selector, text, clear=True):
        """Focuses the element and types text into it, as a keyboard would."""
        self.eval(f"""(() => {{
            const e = document.querySelector({json.dumps(selector)});
            if (!e) throw new Error('nothing matches ' + {json.dumps(selector)});
            e.focus();
            if ({'true' if clear else 'false'} && 'value' in e) {{ e.select && e.select(); }}
        }})()""")
        if clear:
            self.press("Backspace")
        self.command("Input.insertText", {"text": text})

    KEYS = {"Enter": (13, "\r"), "Backspace": (8, ""), "Escape": (27, ""), "Tab": (9, "")}

    def press(self, key):
        """One key press (Enter, Backspace, Escape, Tab) on whatever has the focus."""
        code, text = self.KEYS[key]
        down = {"type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code}
        if text:
            down["text"] = text
        self.command("Input.dispatchKeyEvent", down)
        self.command("Input.dispatchKeyEvent",
                     {"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code})

    def set_files(self, selector, paths):
        """Chooses files for an <input type=file>, as its file chooser would."""
        root = self.command("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = self.command("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        if not node:
            raise BrowserError(f"nothing matches {selector!r}")
        self.command("DOM.setFileInputFiles", {"nodeId": node, "files": [os.path.abspath(p) for p in paths]})

    def heap_bytes(self):
        """The page's JavaScript heap in use, in bytes."""
        return self.command("Runtime.getHeapUsage")["usedSize"]

    def screenshot(self, path):
        data = self.command("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def _exit_status(self):
        """How Chromium ended, waiting a moment for it: an exit code, a signal, or still running."""
        try:
            code = self.process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            return "it was still running"
        return f"it was killed by signal {-code}" if code < 0 else f"it exited with status {code}"

    def _log_tail(self, lines=12):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""
        return " / ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())

    def close(self):
        try:
            if self.process.poll() is None:
                try:
                    self._post("Browser.close")
                    self.process.wait(timeout=5)
                except Exception:
                    pass
            if self.process.poll() is None:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=5)
        finally:
            for fd in (self._commands, self._answers_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self.home, ignore_errors=True)
