"""The data viewer at /.ui/, driven in a real headless Chromium (browser.py).

Each test starts its own `rtdb serve` (conftest's `serve`) and opens the page as a user would:
clicks and typing arrive as input events, dialogs are recorded, files are chosen through the
file input and downloads land in a folder. What the page shows is read through the hooks
documented at the top of viewer.js (`.row[data-path=…]`, element ids). One Chromium serves the
whole module (starting it costs about a second); every test opens a fresh page.

The two checks of the page's files themselves (the script parses, the three files stay under
150 KB) need no browser.
"""

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from browser import Browser, chromium_path
from conftest import RTDB_BIN, REPO, Server, http

PAGE_DIR = os.path.join(REPO, "Sources", "RTDBViewer", "page")
ADMIN = {"Authorization": "Bearer anything"}  # without --secret any bearer is the admin


# ---------------------------------------------------------------------------------------------
# The page's files

def test_viewer_script_parses():
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH: cannot check that viewer.js parses")
    proc = subprocess.run([node, "--check", os.path.join(PAGE_DIR, "viewer.js")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_viewer_files_stay_under_150_kb():
    names = ["index.html", "viewer.js", "viewer.css"]
    total = sum(os.path.getsize(os.path.join(PAGE_DIR, n)) for n in names)
    assert total < 150 * 1024, "the viewer's files total %d bytes" % total


def test_viewer_page_loads_nothing_from_elsewhere():
    """No outside host, no inline script or style (the page's Content-Security-Policy forbids them)."""
    for name in ["index.html", "viewer.js", "viewer.css"]:
        with open(os.path.join(PAGE_DIR, name)) as f:
            text = f.read()
        for banned in ["http://", "https://", "//cdn", "@import"]:
            assert banned not in text, "%s mentions %r" % (name, banned)
    with open(os.path.join(PAGE_DIR, "index.html")) as f:
        html = f.read()
    assert " style=" not in html and "<style" not in html
    assert "<script>" not in html and "onclick" not in html.lower()


# ---------------------------------------------------------------------------------------------
# The browser

@pytest.fixture(scope="module")
def downloads(tmp_path_factory):
    return str(tmp_path_factory.mktemp("downloads"))


@pytest.fixture(scope="module")
def chromium(downloads):
    b = Browser.start(downloads)
    yield b
    b.close()


@pytest.fixture
def page(chromium):
    """The module's browser, with what the previous test saw forgotten."""
    chromium.dialogs.clear()
    chromium.console_errors.clear()
    yield chromium
    errors = list(chromium.console_errors)
    chromium.open("about:blank")
    assert not errors, "the page reported errors: %s" % errors


def row(path):
    return '.row[data-path=%s]' % json.dumps(path)


def open_view(b, server, path="/", ns=None):
    url = server.ready["ui"] + ("?ns=" + ns if ns else "") + "#" + path
    b.open(url)
    b.wait_for("window.rtdbViewer && rtdbViewer.state.connected", timeout=10)
    b.wait_for("!document.querySelector('.v-pending')", timeout=10)


def value_of(b, path):
    return b.eval("(() => { const e = document.querySelector(%s); return e && e.querySelector(':scope > .value').textContent })()"
                  % json.dumps(row(path)))


def wait_value(b, path, text, timeout=5):
    b.wait_for("(() => { const e = document.querySelector(%s); return e && e.querySelector(':scope > .value').textContent === %s })()"
               % (json.dumps(row(path)), json.dumps(text)), timeout=timeout)


def exists(b, path):
    return b.eval("!!document.querySelector(%s)" % json.dumps(row(path)))


def select(b, path):
    b.click(row(path) + " [data-action=select]")
    b.wait_for("document.getElementById('sel-path').textContent === %s" % json.dumps(path))


def get(server, path, headers=ADMIN):
    r = http(server, "GET", path + ".json", headers=headers)
    assert r.status == 200, r
    return r.json()


def put(server, path, value):
    r = http(server, "PUT", path.rstrip("/") + ".json" if path != "/" else "/.json", value, headers=ADMIN)
    assert r.status == 200, r


SAMPLE = {
    "users": {"ada": {"age": 36, "name": "Ada", "admin": True}, "bob": {"age": 41, "name": "Bob"}},
    "motto": "hello",
    "count": 3,
}


# ---------------------------------------------------------------------------------------------
# The tree

def test_viewer_shows_the_tree_with_types_and_priorities(serve, page):
    server = serve()
    put(server, "/", SAMPLE)
    r = http(server, "PUT", "/users/bob/.priority.json", 5, headers=ADMIN)
    assert r.status == 200
    open_view(page, server)
    assert value_of(page, "/motto") == '"hello"'
    assert page.eval("document.querySelector(%s).classList.contains('v-string')" % json.dumps(row("/motto") + " > .value"))
    assert value_of(page, "/count") == "3"
    assert page.eval("document.querySelector(%s).classList.contains('v-number')" % json.dumps(row("/count") + " > .value"))
    # Closed objects show how many children they have, and nothing below them is in the page.
    assert value_of(page, "/users") == "{2 children}"
    assert not exists(page, "/users/ada")
    page.click(row("/users") + " [data-action=toggle]")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/ada")))
    assert "priority 5" in page.eval("document.querySelector(%s).textContent" % json.dumps(row("/users/bob")))
    select(page, "/users/bob")
    assert page.eval("document.getElementById('sel-priority').textContent") == "5"
    page.click(row("/users/ada") + " [data-action=toggle]")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/ada/admin")))
    if os.environ.get("RTDB_VIEWER_SCREENSHOT"):  # a picture of the tree for the documentation
        page.screenshot(os.environ["RTDB_VIEWER_SCREENSHOT"])
    assert value_of(page, "/users/ada/admin") == "true"
    assert page.eval("document.querySelector(%s).classList.contains('v-boolean')" % json.dumps(row("/users/ada/admin") + " > .value"))
    # "open" makes a node the one in view and says so in the address bar.
    page.click(row("/users/bob") + " [data-action=open]")
    page.wait_for("location.hash === '#/users/bob'")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/bob/name")))
    assert page.eval("document.querySelector('#tree .row').dataset.path") == "/users/bob"


ARROWS = {"ArrowUp": 38, "ArrowDown": 40, "ArrowLeft": 37, "ArrowRight": 39}


def arrow(page, key):
    for kind in ("keyDown", "keyUp"):
        page.command("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key,
                                                "windowsVirtualKeyCode": ARROWS[key]})


def focused_path(page):
    return page.eval("document.activeElement.dataset.path + ' ' + document.activeElement.dataset.action")


def test_viewer_tree_works_from_the_keyboard(serve, page):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server)
    page.eval("document.querySelector(%s).focus()" % json.dumps(row("/users") + " [data-action=select]"))
    arrow(page, "ArrowRight")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/ada")))
    assert focused_path(page) == "/users select"
    arrow(page, "ArrowDown")
    assert focused_path(page) == "/users/ada select"
    page.press("Enter")
    page.wait_for("document.getElementById('sel-path').textContent === '/users/ada'")
    arrow(page, "ArrowLeft")
    assert focused_path(page) == "/users select"
    arrow(page, "ArrowLeft")
    page.wait_for("!document.querySelector(%s)" % json.dumps(row("/users/ada")))
    arrow(page, "ArrowUp")
    assert focused_path(page) == "/motto select"
    # Tab reaches the expand button, and Enter presses it.
    page.eval("document.querySelector(%s).focus()" % json.dumps(row("/users") + " [data-action=toggle]"))
    page.press("Enter")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/bob")))


def test_viewer_opens_the_node_named_in_the_link(serve, page):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server, "/users/ada")
    assert page.eval("document.querySelector('#tree .row').dataset.path") == "/users/ada"
    assert value_of(page, "/users/ada/name") == '"Ada"'
    assert not exists(page, "/motto")
    assert "ada" in page.eval("document.getElementById('crumbs').textContent")
    # A leaf in view, followed live (the same page: only the address's hash changes).
    page.eval("location.hash = '#/motto'")
    page.wait_for("document.querySelector('#tree .row')?.dataset.path === '/motto' && !document.querySelector('.v-pending')")
    assert page.eval("document.querySelectorAll('#tree .row').length") == 1
    wait_value(page, "/motto", '"hello"')
    put(server, "/motto", "bye")
    wait_value(page, "/motto", '"bye"')


def test_viewer_shows_writes_of_other_clients_highlighted_without_closing_nodes(serve, rtdb, page):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server)
    page.click(row("/users") + " [data-action=toggle]")
    page.click(row("/users/ada") + " [data-action=toggle]")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/ada/age")))

    # Changed: a write by the command-line tool on the same file reaches the page's stream.
    rtdb("set", "/users/ada/age", "37")
    page.wait_for("document.querySelector(%s)?.classList.contains('changed')" % json.dumps(row("/users/ada/age")))
    assert value_of(page, "/users/ada/age") == "37"
    assert exists(page, "/users/ada/name"), "the open node was collapsed"
    # Added and removed, each styled apart.
    rtdb("set", "/users/cy", '{"age": 7}')
    page.wait_for("document.querySelector(%s)?.classList.contains('added')" % json.dumps(row("/users/cy")))
    rtdb("remove", "/users/bob")
    page.wait_for("document.querySelector(%s)?.classList.contains('removed')" % json.dumps(row("/users/bob")))
    # The highlight lasts a moment; the removed row then goes.
    page.wait_for("!document.querySelector(%s)" % json.dumps(row("/users/bob")), timeout=5)
    page.wait_for("!document.querySelector('.row.added, .row.changed, .row.removed')", timeout=5)
    assert exists(page, "/users/ada/age")

    # A write by another client appears within 200 ms (the best of three, measured from just
    # before the write is sent until the page shows it, both on this machine's clock).
    page.eval("""window.seen = {}; new MutationObserver(() => {
        const e = document.querySelector('.row[data-path="/count"] > .value');
        if (e && !(e.textContent in window.seen)) window.seen[e.textContent] = Date.now();
    }).observe(document.getElementById('tree'), {subtree: true, childList: true, characterData: true}); true""")
    delays = []
    for n in (100, 101, 102):
        sent = time.time()
        put(server, "/count", n)
        shown = page.wait_for("window.seen[%s]" % json.dumps(str(n)))
        delays.append(shown / 1000.0 - sent)
    assert min(delays) < 0.2, "writes appeared after %s s" % delays


# ---------------------------------------------------------------------------------------------
# Edits

def test_viewer_sets_typed_values(serve, page):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server)
    page.click(row("/users") + " [data-action=toggle]")
    page.click(row("/users/ada") + " [data-action=toggle]")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/ada/age")))
    cases = [("number", "40", 40, "40"), ("string", "40", "40", '"40"'), ("boolean", "false", False, "false"),
             ("json", '{"years": 40}', {"years": 40}, "{1 child}")]
    select(page, "/users/ada/age")
    for kind, text, stored, shown in cases:
        page.eval("document.getElementById('set-type').value = %s" % json.dumps(kind))
        page.type("#set-value", text)
        page.click("#set-go")
        wait_value(page, "/users/ada/age", shown)
        assert get(server, "/users/ada/age") == stored
    # null deletes.
    page.eval("document.getElementById('set-type').value = 'null'")
    page.click("#set-go")
    page.wait_for("!document.querySelector(%s)" % json.dumps(row("/users/ada/age")), timeout=5)
    assert get(server, "/users/ada/age") is None
    # A value that is not of its type is refused in the page; nothing is sent.
    select(page, "/users/ada/name")
    page.eval("document.getElementById('set-type').value = 'number'")
    page.type("#set-value", "forty")
    page.click("#set-go")
    page.wait_for("document.getElementById('edit-status').textContent.includes('not a number')")
    assert get(server, "/users/ada/name") == "Ada"


def test_viewer_adds_children_by_name_and_by_push_key(serve, page):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server)
    select(page, "/users")
    page.type("#add-name", "dan")
    page.eval("document.getElementById('add-type').value = 'json'")
    page.type("#add-value", '{"age": 5}')
    page.click("#add-go")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/dan")))
    assert get(server, "/users/dan") == {"age": 5}

    # An empty name: a push key.
    select(page, "/")
    page.eval("document.getElementById('add-name').value = ''")
    page.eval("document.getElementById('add-type').value = 'string'")
    page.type("#add-value", "pushed")
    page.click("#add-go")
    page.wait_for("document.getElementById('edit-status').textContent.startsWith('added /')")
    key = page.eval("document.getElementById('edit-status').textContent").split("/")[-1]
    assert len(key) == 20 and key.startswith("-"), key
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/" + key)))
    assert value_of(page, "/" + key) == '"pushed"'
    assert get(server, "/" + key) == "pushed"


def test_viewer_deletes_after_a_confirmation_naming_the_path_and_its_children(serve, page):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server)
    page.click(row("/users") + " [data-action=toggle]")
    select(page, "/users/ada")
    page.click("#delete-go")
    page.wait_for("!document.querySelector(%s)" % json.dumps(row("/users/ada")), timeout=5)
    assert page.dialogs, "no confirmation was asked"
    kind, message = page.dialogs[-1]
    assert kind == "confirm"
    assert "/users/ada" in message and "3 children" in message, message
    assert get(server, "/users/ada") is None
    assert get(server, "/users/bob") == SAMPLE["users"]["bob"]


def test_viewer_imports_a_file_by_replacing_or_merging_and_exports_a_node(serve, page, folder, downloads):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server)
    first = os.path.join(folder, "first.json")
    with open(first, "w") as f:
        json.dump({"a": 1, "b": {"c": True}}, f)
    select(page, "/users")
    page.set_files("#import-file", [first])
    page.eval("document.getElementById('import-mode').value = 'replace'")
    page.click("#import-go")
    page.wait_for("document.getElementById('edit-status').textContent.includes('done')")
    assert get(server, "/users") == {"a": 1, "b": {"c": True}}
    wait_value(page, "/users", "{2 children}")

    second = os.path.join(folder, "second.json")
    with open(second, "w") as f:
        json.dump({"b": {"d": 2}, "e": "x"}, f)
    page.set_files("#import-file", [second])
    page.eval("document.getElementById('import-mode').value = 'merge'")
    page.click("#import-go")
    wait_value(page, "/users", "{3 children}")
    assert get(server, "/users") == {"a": 1, "b": {"d": 2}, "e": "x"}

    # Export: the downloaded file holds the node's value.
    target = os.path.join(downloads, "users.json")
    if os.path.exists(target):
        os.remove(target)
    page.click("#export-go")
    deadline = time.monotonic() + 10
    while not os.path.exists(target) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(target), os.listdir(downloads)
    time.sleep(0.2)  # the download is renamed into place once complete
    with open(target) as f:
        assert json.load(f) == get(server, "/users")


def test_viewer_shows_a_refused_write_in_place_and_changes_nothing(serve, rtdb, page, folder):
    rules = os.path.join(folder, "rules.json")
    with open(rules, "w") as f:
        json.dump({"rules": {".read": True, "open": {".write": True}}}, f)
    rtdb("set", "/", '{"locked": {"x": 1}, "open": {"y": 1}}')
    server = serve("--rules", rules)
    open_view(page, server)  # no credential: an anonymous client, so the rules apply
    page.click(row("/locked") + " [data-action=toggle]")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/locked/x")))
    select(page, "/locked/x")
    page.eval("document.getElementById('set-type').value = 'number'")
    page.type("#set-value", "2")
    page.click("#set-go")
    page.wait_for("document.querySelector(%s)?.textContent.includes('Permission denied')"
                  % json.dumps(row("/locked/x") + " .row-error"))
    assert value_of(page, "/locked/x") == "1"
    assert get(server, "/locked/x") == 1
    # Where the rules allow it the same client writes.
    page.click(row("/open") + " [data-action=toggle]")
    select(page, "/open")
    page.type("#add-name", "free")
    page.eval("document.getElementById('add-type').value = 'number'")
    page.type("#add-value", "1")
    page.click("#add-go")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/open/free")))
    assert get(server, "/open/free") == 1
    # Rules that stop this client reading end its stream with `cancel`: the page says so.
    r = http(server, "PUT", "/.settings/rules.json", {"rules": {".read": False}}, headers=ADMIN)
    assert r.status == 200, r
    page.wait_for("!document.getElementById('banner').hidden && "
                  "document.getElementById('banner').textContent.includes('cancelled')", timeout=10)


def test_viewer_with_a_secret_shows_nothing_until_the_credential_is_given(serve, page):
    server = serve("--secret", "s3cret-token")
    r = http(server, "PUT", "/.json", SAMPLE, headers={"Authorization": "Bearer s3cret-token"})
    assert r.status == 200
    page.open(server.ready["ui"] + "#/")
    page.wait_for("!document.getElementById('cred-form').hidden")
    assert page.eval("document.querySelectorAll('.row').length") == 0
    assert "hello" not in page.eval("document.body.innerText")
    # A wrong credential is refused and still nothing shows.
    page.type("#cred-input", "wrong")
    page.click("#cred-save")
    page.wait_for("!document.getElementById('cred-form').hidden && document.getElementById('cred-reason').textContent.includes('refused')")
    assert page.eval("document.querySelectorAll('.row').length") == 0
    page.type("#cred-input", "s3cret-token")
    page.press("Enter")
    page.wait_for("window.rtdbViewer.state.connected", timeout=10)
    wait_value(page, "/motto", '"hello"')
    assert page.eval("document.getElementById('cred-form').hidden")
    # The credential lives in memory only.
    assert page.eval("localStorage.length + sessionStorage.length") == 0
    assert "s3cret" not in page.eval("document.cookie + location.href")


# ---------------------------------------------------------------------------------------------
# Query

def test_viewer_queries_the_node_in_view_and_shows_its_indexes(serve, page, folder, rtdb):
    rules = os.path.join(folder, "rules.json")
    with open(rules, "w") as f:
        json.dump({"rules": {".read": True, ".write": True, "scores": {".indexOn": ["s"]}}}, f)
    rtdb("set", "/scores", '{"a": {"s": 3}, "b": {"s": 1}, "c": {"s": 2}, "d": {"t": 0}}')
    server = serve("--rules", rules)
    open_view(page, server, "/scores")
    # Anonymous: the rules are not readable.
    page.wait_for("document.getElementById('q-indexes').textContent === 'rules not readable'")
    page.eval("document.getElementById('q-order').value = 'child'")
    page.type("#q-child", "s")
    page.eval("document.getElementById('q-limit-kind').value = 'first'")
    page.type("#q-limit", "3")
    page.click("#q-run")
    page.wait_for("document.querySelectorAll('#q-results li').length === 3")
    assert page.eval("Array.from(document.querySelectorAll('#q-results li')).map(l => l.dataset.key)") == ["d", "b", "c"]
    page.type("#q-start", "2")
    page.eval("document.getElementById('q-limit-kind').value = 'last'")
    page.type("#q-limit", "1")
    page.click("#q-run")
    page.wait_for("Array.from(document.querySelectorAll('#q-results li')).map(l => l.dataset.key).join() === 'a'")
    # Exclusive bounds, by key.
    page.eval("document.getElementById('q-order').value = 'key'")
    page.eval("document.getElementById('q-limit-kind').value = ''")
    page.eval("document.getElementById('q-start').value = ''")
    page.type("#q-start-after", '"a"')
    page.type("#q-end-before", '"d"')
    page.click("#q-run")
    page.wait_for("Array.from(document.querySelectorAll('#q-results li')).map(l => l.dataset.key).join() === 'b,c'")
    page.eval("document.getElementById('q-start-after').value = ''; document.getElementById('q-end-before').value = ''")
    page.eval("document.getElementById('q-order').value = 'child'")
    page.type("#q-start", "2")
    # A query the server refuses: its error, shown.
    page.type("#q-equal", "2")
    page.click("#q-run")
    page.wait_for("document.getElementById('q-error').textContent.startsWith('query refused')")

    # With the admin credential the declared index shows.
    page.click("#cred-button")
    page.type("#cred-input", "any-bearer-is-the-admin")
    page.press("Enter")
    page.wait_for("document.getElementById('q-indexes').textContent === 's'")


def test_viewer_lists_namespaces_and_switches_between_them(serve, page, folder):
    data = os.path.join(folder, "data")
    os.mkdir(data)
    server = serve(db=None, data_dir=data)
    for ns, v in (("alpha", {"who": "alpha"}), ("beta", {"who": "beta"})):
        r = http(server, "PUT", "/.json?ns=" + ns, v, headers=ADMIN)
        assert r.status == 200, r
    open_view(page, server, ns="alpha")
    wait_value(page, "/who", '"alpha"')
    page.wait_for("Array.from(document.querySelectorAll('#ns-select option')).some(o => o.value === 'beta')")
    page.eval("const s = document.getElementById('ns-select'); s.value = 'beta'; s.dispatchEvent(new Event('change')); true")
    wait_value(page, "/who", '"beta"')
    assert page.eval("new URLSearchParams(location.search).get('ns')") == "beta"
    page.type("#ns-input", "alpha")
    page.press("Enter")
    wait_value(page, "/who", '"alpha"')
    # A browser opening the server's root with a namespace lands on the page showing it.
    page.open(server.url + "/?ns=beta")
    page.wait_for("location.pathname === '/.ui/'")
    wait_value(page, "/who", '"beta"')


# ---------------------------------------------------------------------------------------------
# Size and reconnection

def test_viewer_opens_a_node_with_a_million_children_quickly_and_in_little_memory(serve, rtdb, page, folder):
    big = os.path.join(folder, "big.json")
    with open(big, "w") as f:
        # Integer keys: the page must order them as numbers (0, 1, 2, … not 0, 1, 10, …).
        f.write("{" + ",".join('"%d":%d' % (i, i) for i in range(1000000)) + "}")
    subprocess.run([RTDB_BIN, "--db", os.path.join(folder, "db.db"), "set", "/big", "--file", big],
                   check=True, stdout=subprocess.DEVNULL, timeout=120)
    rtdb("set", "/small", "1")
    server = serve()
    open_view(page, server, "/small")
    # Measured in the page: from the link's hash changing to the first 200 children shown
    # with their values (the first page of keys, the stream's first event, the rows).
    opened = page.eval("""(async () => {
        const t0 = performance.now();
        location.hash = '#/big';
        const done = () => document.querySelectorAll('#tree .row').length === 201
            && document.querySelector('#tree .row').dataset.path === '/big' && !document.querySelector('.v-pending');
        while (!done()) {
            if (performance.now() - t0 > 15000) return -1;
            await new Promise(r => setTimeout(r, 5));
        }
        return performance.now() - t0 })()""")
    assert 0 <= opened < 1000, "the node took %d ms to open" % opened
    assert value_of(page, "/big/199") == "199"
    assert not exists(page, "/big/200")
    page.click("#tree [data-action=more]")
    page.wait_for("document.querySelectorAll('#tree .row').length === 401 && !document.querySelector('.v-pending')", timeout=10)
    assert value_of(page, "/big/399") == "399"
    # Live after "more": the stream now covers the first 400 children.
    rtdb("set", "/big/300", '"changed"')
    page.wait_for("document.querySelector(%s)?.classList.contains('changed')" % json.dumps(row("/big/300")))
    heap = page.heap_bytes()
    assert heap < 200 * 1024 * 1024, "the page uses %d bytes of heap" % heap


def test_viewer_reads_a_node_too_large_to_stream_a_page_at_a_time(serve, page):
    """A child of the node in view that holds megabytes would come whole in the stream's first
    event: past 4 MB the page stops the stream, reads the node a page at a time, says it is
    not live, and still edits it."""
    server = serve()
    put(server, "/", {"huge": {k: k * (1024 * 1024) for k in "abcde"}, "small": 1})
    open_view(page, server)
    page.wait_for("document.getElementById('banner').textContent.startsWith('Not live')", timeout=15)
    wait_value(page, "/small", "1")
    wait_value(page, "/huge", "{…}")
    page.click(row("/huge") + " [data-action=toggle]")
    page.wait_for("document.querySelectorAll('#tree .row').length === 8", timeout=10)
    assert value_of(page, "/huge/c").endswith("(1048576 characters)")
    assert len(value_of(page, "/huge/c")) < 1000
    assert page.heap_bytes() < 200 * 1024 * 1024
    # Without a stream the page reads what it changed again; what is open stays open.
    select(page, "/small")
    page.eval("document.getElementById('set-type').value = 'number'")
    page.type("#set-value", "2")
    page.click("#set-go")
    wait_value(page, "/small", "2")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/huge/e")), timeout=10)


def test_viewer_says_when_the_server_goes_away_and_reconnects(serve, rtdb, page, folder):
    server = serve()
    put(server, "/", SAMPLE)
    open_view(page, server)
    page.click(row("/users") + " [data-action=toggle]")
    page.wait_for("!!document.querySelector(%s)" % json.dumps(row("/users/ada")))
    assert page.eval("document.getElementById('banner').hidden")
    port = server.port
    server.kill9()
    page.wait_for("!document.getElementById('banner').hidden && document.getElementById('banner').textContent.includes('disconnected')",
                  timeout=10)
    rtdb("set", "/motto", '"while away"')
    # The same file on the same port, as a restarted server would be.
    again = Server(folder, [], db=os.path.join(folder, "db.db"))
    again.command = lambda: [RTDB_BIN, "--db", again.db, "serve", "--port", str(port)]
    again.start()
    try:
        page.wait_for("document.getElementById('banner').hidden", timeout=10)
        wait_value(page, "/motto", '"while away"')
        assert exists(page, "/users/ada"), "the open node was collapsed by the reconnection"
        rtdb("set", "/count", "9")
        wait_value(page, "/count", "9")
    finally:
        again.proc.send_signal(signal.SIGTERM)
        again.proc.wait(timeout=20)
