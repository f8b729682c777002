"""curl against `rtdb serve`: each of Firebase's REST worked examples, and the HTTP/1.1 habits curl has
(keep-alive, chunked bodies, Expect: 100-continue, streaming)."""

import json
import os
import queue
import re
import subprocess
import threading


from conftest import wait_for

JSON_TYPE = "application/json; charset=utf-8"
PUSH_ID = re.compile(r"^-[0-9A-Za-z_-]{19}$")


class CurlResponse:
    def __init__(self, status, headers, body, interim, stderr):
        self.status = status
        self.headers = headers
        self.body = body
        self.interim = interim  # statuses of 1xx responses before the final one
        self.stderr = stderr

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return "<curl %d %r %r>" % (self.status, self.headers, self.body[:300])


def curl(url, *args, timeout=30):
    """Runs `curl -sS -i ARGS URL` and returns the final response (1xx heads noted in .interim)."""
    proc = subprocess.run(["curl", "-sS", "-i", "--max-time", str(timeout - 5)] + list(args) + [url],
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, "curl failed (%d): %s" % (proc.returncode, proc.stderr.decode())
    raw = proc.stdout
    interim = []
    while True:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        assert sep, "no response head in %r" % raw[:500]
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        if 100 <= status < 200:
            interim.append(status)
            raw = rest
            continue
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return CurlResponse(status, headers, rest, interim, proc.stderr.decode())


def send(url, method, body=None, *args):
    """curl -X METHOD with a JSON body: a str is sent as it is, anything else as its JSON."""
    extra = ["-X", method]
    if body is not None:
        extra += ["-H", "Content-Type: application/json", "--data-binary",
                  body if isinstance(body, str) else json.dumps(body)]
    return curl(url, *(extra + list(args)))


def assert_json(response, status, value):
    assert response.status == status, response
    assert response.headers.get("content-type", "").replace(" ", "").lower() == JSON_TYPE.replace(" ", ""), response
    assert response.json() == value


def assert_error(response, status):
    assert response.status == status, response
    assert response.headers.get("content-type", "").replace(" ", "").lower() == JSON_TYPE.replace(" ", ""), response
    body = response.json()
    assert isinstance(body, dict) and list(body) == ["error"] and isinstance(body["error"], str) and body["error"], body
    return body["error"]


# ---------------------------------------------------------------------------------------------
# the REST worked examples, row by row

def test_put_returns_written_data(server):
    name = {"first": "Jack", "last": "Sparrow"}
    assert_json(send(server.url + "/users/jack/name.json", "PUT", name), 200, name)
    assert_json(curl(server.url + "/users/jack/name.json"), 200, name)


def test_put_print_silent_is_204(server):
    r = send(server.url + "/users/jack/name.json?print=silent", "PUT", {"first": "Jack", "last": "Sparrow"})
    assert r.status == 204
    assert r.body == b""
    assert_json(curl(server.url + "/users/jack/name/last.json"), 200, "Sparrow")


def test_get_print_silent_is_204(server, rtdb):
    rtdb("set", "/x", "1")
    r = curl(server.url + "/x.json?print=silent")
    assert (r.status, r.body) == (204, b"")


def test_get_missing_is_null(server):
    assert_json(curl(server.url + "/users/nobody.json"), 200, None)


def test_post_returns_push_id(server, rtdb):
    message = {"user_id": "jack", "text": "Ahoy!"}
    r = send(server.url + "/message_list.json", "POST", message)
    assert r.status == 200, r
    body = r.json()
    assert list(body) == ["name"]
    assert PUSH_ID.match(body["name"]), body
    assert rtdb("get", "/message_list/" + body["name"]).json() == message
    second = send(server.url + "/message_list.json", "POST", message).json()["name"]
    assert second > body["name"]


def test_patch_returns_data_sent(server, rtdb):
    rtdb("set", "/users/jack/name", '{"first":"Jack","last":"Sparrow"}')
    assert_json(send(server.url + "/users/jack/name/.json", "PATCH", {"last": "Jones"}), 200, {"last": "Jones"})
    assert rtdb("get", "/users/jack/name").json() == {"first": "Jack", "last": "Jones"}


def test_patch_multi_path_deletes_null(server, rtdb):
    rtdb("set", "/users", '{"jack":{"name":{"first":"Jack","last":"Sparrow"}},"ada":{"nick":"a","born":1815}}')
    r = send(server.url + "/users.json", "PATCH", {"jack/name/last": "Jones", "ada/nick": None})
    assert r.status == 200, r
    assert rtdb("get", "/users").json() == {"jack": {"name": {"first": "Jack", "last": "Jones"}}, "ada": {"born": 1815}}


def test_delete_returns_null(server, rtdb):
    rtdb("set", "/users/jack/name", '{"first":"Jack","last":"Jones"}')
    assert_json(send(server.url + "/users/jack/name/last.json", "DELETE"), 200, None)
    assert rtdb("get", "/users/jack/name").json() == {"first": "Jack"}


def test_shallow(server, rtdb):
    rtdb("set", "/users", '{"jack":{"name":{"first":"Jack"}},"ada":{"nick":"a"}}')
    assert_json(curl(server.url + "/users.json?shallow=true"), 200, {"jack": True, "ada": True})
    assert_json(curl(server.url + "/users/jack/name/first.json?shallow=true"), 200, "Jack")


DINOSAURS = {
    "lambeosaurus": {"height": 2.1, "length": 12.5},
    "stegosaurus": {"height": 4, "length": 9},
    "triceratops": {"height": 3, "length": 9},
    "bruhathkayosaurus": {"height": 25, "length": 44},
    "linhenykus": {"height": 0.6, "length": 1},
}


def test_order_by_start_at_limit(server, rtdb):
    rtdb("set", "/dinosaurs", json.dumps(DINOSAURS))
    r = curl(server.url + "/dinosaurs.json?orderBy=%22height%22&startAt=3&limitToFirst=2")
    assert_json(r, 200, {k: DINOSAURS[k] for k in ("triceratops", "stegosaurus")})
    # curl's --data-urlencode with -G encodes the same query.
    r = curl(server.url + "/dinosaurs.json", "-G", "--data-urlencode", 'orderBy="$key"',
             "--data-urlencode", 'endAt="linhenykus"', "--data-urlencode", "limitToLast=2")
    assert_json(r, 200, {k: DINOSAURS[k] for k in ("lambeosaurus", "linhenykus")})


def test_query_without_order_by_is_400(server, rtdb):
    rtdb("set", "/dinosaurs", json.dumps(DINOSAURS))
    message = assert_error(curl(server.url + "/dinosaurs.json?limitToFirst=2"), 400)
    assert "orderBy" in message


def test_etag_and_if_match(server, rtdb):
    rtdb("set", "/x", '{"v":1}')
    r = curl(server.url + "/x.json", "-H", "X-Firebase-ETag: true")
    assert_json(r, 200, {"v": 1})
    tag = r.headers.get("etag")
    assert tag and tag != "null_etag", r
    rtdb("set", "/x/v", "2")
    # A stale tag: 412, the current tag, the current value; nothing written.
    stale = send(server.url + "/x.json", "PUT", {"v": 3}, "-H", "if-match: " + tag)
    assert stale.status == 412, stale
    assert stale.json() == {"v": 2}
    current = stale.headers.get("etag")
    assert current and current != tag, stale
    assert rtdb("get", "/x").json() == {"v": 2}
    # The current tag: written, with the new tag.
    fresh = send(server.url + "/x.json", "PUT", {"v": 3}, "-H", "if-match: " + current)
    assert_json(fresh, 200, {"v": 3})
    assert fresh.headers.get("etag") == curl(server.url + "/x.json", "-H", "X-Firebase-ETag: true").headers.get("etag")
    assert rtdb("get", "/x").json() == {"v": 3}


def test_null_etag(server, rtdb):
    r = curl(server.url + "/new.json", "-H", "X-Firebase-ETag: true")
    assert_json(r, 200, None)
    assert r.headers.get("etag") == "null_etag"
    created = send(server.url + "/new.json", "PUT", {"made": 1}, "-H", "if-match: null_etag")
    assert_json(created, 200, {"made": 1})
    again = send(server.url + "/new.json", "PUT", {"made": 2}, "-H", "if-match: null_etag")
    assert again.status == 412, again
    assert again.json() == {"made": 1}
    assert again.headers.get("etag") not in (None, "", "null_etag")
    assert rtdb("get", "/new").json() == {"made": 1}


def test_if_none_match_304(server, rtdb):
    rtdb("set", "/x", '"same"')
    tag = curl(server.url + "/x.json", "-H", "X-Firebase-ETag: true").headers["etag"]
    r = curl(server.url + "/x.json", "-H", "if-none-match: " + tag)
    assert (r.status, r.body) == (304, b"")
    rtdb("set", "/x", '"changed"')
    r = curl(server.url + "/x.json", "-H", "if-none-match: " + tag)
    assert_json(r, 200, "changed")
    assert r.headers.get("etag") not in (None, tag)


def test_permission_denied_is_401(serve):
    server = serve("--secret", "s3cret")
    r = send(server.url + "/secret.json", "PUT", {"a": 1})
    assert_json(r, 401, {"error": "Permission denied"})
    assert_json(curl(server.url + "/secret.json"), 401, {"error": "Permission denied"})
    assert_json(curl(server.url + "/secret.json?auth=s3cret"), 200, None)
    assert curl(server.url + "/secret.json", "-H", "Authorization: Bearer owner").status == 401
    # Streams too.
    refused = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                              "-H", "Accept: text/event-stream", server.url + "/secret.json"],
                             capture_output=True, text=True, timeout=20)
    assert refused.stdout == "401", refused
    stream = CurlStream(server.url + "/secret.json?auth=s3cret")
    try:
        assert stream.status == 200
        assert stream.next_event() == ("put", {"path": "/", "data": None})
    finally:
        stream.close()


def test_invalid_path_is_400(server, rtdb):
    for path in ("/a/b.c.json", "/a/b%23c.json", "/a/b$c.json", "/a/b%5Bc.json"):
        message = assert_error(send(server.url + path, "PUT", {"x": 1}), 400)
        assert "path" in message.lower(), message
    assert rtdb("get", "/a").json() is None


def test_missing_json_suffix_is_refused(server, rtdb):
    r = send(server.url + "/a/b", "PUT", {"x": 1})
    assert 400 <= r.status < 500, r
    assert rtdb("get", "/a").json() is None


def test_bad_json_is_400(server, rtdb):
    rtdb("set", "/x", '"before"')
    message = assert_error(send(server.url + "/x.json", "PUT", "{bad json"), 400)
    assert "JSON" in message or "json" in message, message
    assert_error(send(server.url + "/x.json", "PATCH", '{"a":'), 400)
    assert_error(send(server.url + "/x.json", "POST", "[1,"), 400)
    assert rtdb("get", "/x").json() == "before"


def test_callback_jsonp(server, rtdb):
    rtdb("set", "/x", '{"a":[1,2]}')
    r = curl(server.url + "/x.json?callback=cb")
    assert r.status == 200, r
    match = re.match(r"^cb\((.*)\);?\s*$", r.body.decode(), re.S)
    assert match, r.body
    assert json.loads(match.group(1)) == {"a": [1, 2]}


def test_format_export_includes_priorities(server, rtdb):
    value = {"a": {".value": 1, ".priority": 5}, "b": {"c": "x", ".priority": "top"}, "d": 2}
    assert send(server.url + "/p.json", "PUT", value).status == 200
    assert_json(curl(server.url + "/p.json"), 200, {"a": 1, "b": {"c": "x"}, "d": 2})
    assert_json(curl(server.url + "/p.json?format=export"), 200, value)
    assert_json(curl(server.url + "/p/a.json?format=export"), 200, {".value": 1, ".priority": 5})
    assert_json(curl(server.url + "/p/d.json?format=export"), 200, 2)


def test_server_values(server, rtdb):
    import time
    before = int(time.time() * 1000)
    r = send(server.url + "/sv.json", "PUT", {"at": {".sv": "timestamp"}, "n": 5})
    after = int(time.time() * 1000)
    assert r.status == 200, r
    stored = rtdb("get", "/sv").json()
    assert before - 1000 <= stored["at"] <= after + 1000, (before, stored, after)
    assert stored["n"] == 5
    r = send(server.url + "/sv/n.json", "PUT", {".sv": {"increment": 2}})
    assert r.status == 200, r
    assert rtdb("get", "/sv/n").json() == 7
    assert_error(send(server.url + "/sv/n.json", "PUT", {".sv": "no-such-value"}), 400)
    assert rtdb("get", "/sv/n").json() == 7


def test_log_lines(serve):
    server = serve("--log")
    assert send(server.url + "/logged.json", "PUT", {"a": 1}).status == 200
    assert curl(server.url + "/logged.json?shallow=true").status == 200
    assert send(server.url + "/bad.json", "PUT", "{nope").status == 400

    def logged():
        lines = server.log_lines()
        return lines if len(lines) >= 3 else None

    lines = wait_for(logged, timeout=10, message="three --log lines")
    assert [(l.get("method"), l.get("status")) for l in lines[:3]] == [("PUT", 200), ("GET", 200), ("PUT", 400)]
    assert lines[0].get("path", "").startswith("/logged.json")
    assert all(isinstance(l.get("ms"), (int, float)) and l["ms"] >= 0 for l in lines[:3]), lines


# ---------------------------------------------------------------------------------------------
# Method override, print=pretty, download

def test_method_override_header(server, rtdb):
    rtdb("set", "/o", '{"a":1,"b":2}')
    r = send(server.url + "/o.json", "POST", {"b": 3}, "-H", "X-HTTP-Method-Override: PATCH")
    assert_json(r, 200, {"b": 3})
    assert rtdb("get", "/o").json() == {"a": 1, "b": 3}
    r = send(server.url + "/o.json", "POST", {"z": 0}, "-H", "X-HTTP-Method-Override: PUT")
    assert_json(r, 200, {"z": 0})
    assert rtdb("get", "/o").json() == {"z": 0}


def test_method_override_query_parameter(server, rtdb):
    rtdb("set", "/o", '{"a":1,"b":2}')
    r = send(server.url + "/o/a.json?x-http-method-override=DELETE", "POST", "")
    assert_json(r, 200, None)
    assert rtdb("get", "/o").json() == {"b": 2}
    r = send(server.url + "/o.json?x-http-method-override=PATCH", "POST", {"c": 4})
    assert_json(r, 200, {"c": 4})
    assert rtdb("get", "/o").json() == {"b": 2, "c": 4}


def test_print_pretty(server, rtdb):
    rtdb("set", "/x", '{"a":{"b":1},"c":"d"}')
    r = curl(server.url + "/x.json?print=pretty")
    assert_json(r, 200, {"a": {"b": 1}, "c": "d"})
    text = r.body.decode()
    assert "\n" in text.strip(), text
    assert re.search(r'^  "a"', text, re.M), text
    assert r.body != curl(server.url + "/x.json").body


def test_download(server, rtdb):
    rtdb("set", "/x", '{"a":1}')
    r = curl(server.url + "/x.json?download=backup.json")
    assert r.status == 200, r
    assert r.json() == {"a": 1}
    disposition = r.headers.get("content-disposition", "")
    assert "attachment" in disposition and "backup.json" in disposition, r.headers


# ---------------------------------------------------------------------------------------------
# HTTP/1.1: keep-alive, chunked bodies, 100-continue, streaming

def test_keep_alive_reuses_one_connection(server, rtdb):
    rtdb("set", "/a", "1")
    rtdb("set", "/b", "2")
    proc = subprocess.run(["curl", "-sS", "--max-time", "20", "-w", "%{http_code} %{num_connects}\\n",
                           "-o", "/dev/null", "-o", "/dev/null", server.url + "/a.json", server.url + "/b.json"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    # The second transfer opened no new connection.
    assert proc.stdout.split("\n")[:2] == ["200 1", "200 0"], proc.stdout
    both = subprocess.run(["curl", "-sS", "--max-time", "20", server.url + "/a.json", server.url + "/b.json"],
                          capture_output=True, text=True, timeout=30)
    assert both.stdout == "12", both.stdout


def test_chunked_request_body(server, folder, rtdb):
    value = {"k%d" % i: "v" * 50 for i in range(200)}
    path = os.path.join(folder, "body.json")
    with open(path, "w") as f:
        json.dump(value, f)
    r = curl(server.url + "/big.json", "-X", "PUT", "-H", "Transfer-Encoding: chunked",
             "-H", "Content-Type: application/json", "--data-binary", "@" + path)
    assert r.status == 200, r
    assert r.json() == value
    assert rtdb("get", "/big").json() == value


def test_expect_100_continue(server, rtdb):
    value = {"text": "x" * 4096}
    r = curl(server.url + "/e.json", "-X", "PUT", "-H", "Expect: 100-continue", "--expect100-timeout", "20",
             "-H", "Content-Type: application/json", "--data-binary", json.dumps(value))
    # The server answered the expectation (curl would otherwise wait 20 s, then send anyway).
    assert r.interim == [100], r
    assert_json(r, 200, value)
    assert rtdb("get", "/e").json() == value


class CurlStream:
    """`curl -N -i -H 'Accept: text/event-stream' URL` read line by line on a thread."""

    def __init__(self, url):
        self.proc = subprocess.Popen(["curl", "-sS", "-N", "-i", "-H", "Accept: text/event-stream", url],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        status_line = self._line()
        self.status = int(status_line.split(" ")[1])
        self.headers = {}
        while True:
            line = self._line()
            if line == "":
                break
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.decode("utf-8").rstrip("\r\n"))
        self.lines.put(None)

    def _line(self, timeout=20):
        line = self.lines.get(timeout=timeout)
        assert line is not None, "stream ended"
        return line

    def next_event(self, timeout=20):
        """The next (name, parsed data) event, keep-alives skipped."""
        name = data = None
        while True:
            line = self._line(timeout)
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data = line[5:].strip()
            elif line == "" and name is not None:
                if name == "keep-alive":
                    name = data = None
                    continue
                return name, json.loads(data)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


def test_stream_with_curl(server, rtdb):
    rtdb("set", "/rooms/1", '{"name":"lobby"}')
    stream = CurlStream(server.url + "/rooms/1.json")
    try:
        assert stream.status == 200
        assert stream.headers.get("content-type", "").startswith("text/event-stream"), stream.headers
        assert stream.next_event() == ("put", {"path": "/", "data": {"name": "lobby"}})
        assert send(server.url + "/rooms/1/topic.json", "PUT", json.dumps("chat")).status == 200
        assert stream.next_event() == ("put", {"path": "/topic", "data": "chat"})
        assert send(server.url + "/rooms/1.json", "PATCH", {"name": "hall", "n/m": 1}).status == 200
        assert stream.next_event() == ("patch", {"path": "/", "data": {"name": "hall", "n/m": 1}})
        # A write above the listened location arrives as a put of the whole new value.
        rtdb("set", "/rooms", '{"1":{"name":"x"},"2":"y"}')
        assert stream.next_event() == ("put", {"path": "/", "data": {"name": "x"}})
        assert send(server.url + "/rooms/1.json", "DELETE").status == 200
        assert stream.next_event() == ("put", {"path": "/", "data": None})
    finally:
        stream.close()


def apply_event(model, name, event):
    """Replays a put/patch event on a local copy of the listened value (as a client does)."""

    def set_at(root, path, value):
        keys = [k for k in path.split("/") if k]
        if not keys:
            return value
        root = dict(root) if isinstance(root, dict) else {}
        node = root
        for k in keys[:-1]:
            child = node.get(k)
            node[k] = dict(child) if isinstance(child, dict) else {}
            node = node[k]
        if value is None:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
        return root

    if name == "put":
        return set_at(model, event["path"], event["data"])
    assert name == "patch", name
    for key, value in event["data"].items():
        model = set_at(model, event["path"].rstrip("/") + "/" + key, value)
    return model


def test_stream_of_a_query_follows_the_window(server, rtdb):
    rtdb("set", "/scores", '{"a":{"s":3},"b":{"s":1},"c":{"s":2}}')
    query = "orderBy=%22s%22&limitToFirst=2"
    stream = CurlStream(server.url + "/scores.json?" + query)
    try:
        name, first = stream.next_event()
        assert (name, first["path"]) == ("put", "/")
        model = first["data"]
        assert model == {"b": {"s": 1}, "c": {"s": 2}}
        for command in (("set", "/scores/d", '{"s":0}'), ("update", "/scores", '{"a/s":-1,"z":{"s":9}}'),
                        ("set", "/scores/d/s", "5"), ("set", "/scores/a", "null")):
            rtdb(*command)
            expected = curl(server.url + "/scores.json?" + query).json()
            while model != expected:
                name, event = stream.next_event()
                model = apply_event(model, name, event)
        assert model == {"b": {"s": 1}, "c": {"s": 2}}
    finally:
        stream.close()


def test_two_servers_on_one_file_see_each_others_writes(serve, rtdb):
    rtdb("set", "/shared", '{"n":0}')
    first, second = serve(), serve()
    streams = [CurlStream(first.url + "/shared.json"), CurlStream(second.url + "/shared.json")]
    try:
        models = []
        for stream in streams:
            name, event = stream.next_event()
            assert (name, event) == ("put", {"path": "/", "data": {"n": 0}})
            models.append(event["data"])
        writes = []
        for i in range(1, 21):
            if i % 3 == 0:
                rtdb("update", "/shared", json.dumps({"n": i, "by/local": i}))
            else:
                target = first if i % 2 else second
                r = send(target.url + "/shared.json", "PATCH", {"n": i, "by/%s" % ("first" if i % 2 else "second"): i})
                assert r.status == 200, r
            writes.append(i)
        final = curl(first.url + "/shared.json").json()
        assert final["n"] == 20
        assert curl(second.url + "/shared.json").json() == final
        # Every write reaches both servers' streams, in commit order: replaying them ends at the
        # stored value, and "n" only ever increases along the way.
        for k, stream in enumerate(streams):
            seen = []
            while models[k] != final:
                name, event = stream.next_event()
                assert name == "patch" and event["path"] == "/", (name, event)
                models[k] = apply_event(models[k], name, event)
                seen.append(models[k]["n"])
            assert seen == writes, seen
    finally:
        for stream in streams:
            stream.close()
