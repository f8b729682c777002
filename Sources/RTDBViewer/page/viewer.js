"use strict";
/*
 * The data viewer of `rtdb serve`, answered at /.ui/. It is an ordinary client of the
 * server's REST API: every read and write goes through /PATH.json with the page's credential,
 * so rules and the secret apply to it as to anyone, and the page itself carries no data.
 *
 * - Where: the namespace is the page URL's ?ns= (none: the server's default); the node in
 *   view is the hash, #/users/ada. Opening a node sets the hash; the hash opens the node.
 * - Reading, bounded: the node in view's children are listed a page of 200 keys at a time
 *   (GET PATH.json?shallow=true&orderBy="$key"&limitToFirst=200, then startAfter the last
 *   key for "more"), so a node with millions of children costs 200 rows.
 * - Live: ONE stream (fetch with Accept: text/event-stream; EventSource cannot send the
 *   Authorization header) on the node in view, keyed to the children loaded
 *   (orderBy="$key"&limitToFirst=N&format=export), so the browser's few connections per
 *   host stay free. Its first put fills in the values (with priorities); later put/patch
 *   events are applied to what is shown without collapsing what is open, and the rows they
 *   touch are highlighted for about a second (classes added, changed, removed). When the
 *   stream ends the banner says so and the page reconnects (backoff up to 2 s).
 * - Too large to follow: the stream sends the loaded children whole, so when one event
 *   passes 4 MB (a child with millions of descendants) the page drops the stream and reads
 *   the node in view a page at a time instead — each child's value, or "{…}" for an object,
 *   from a one-key shallow read — says it is not live, and re-reads after its own edits.
 *   Values the stream has not brought within 400 ms are read the same way meanwhile.
 * - Credential: asked for when a read answers 401/403; kept in memory only (never stored)
 *   and sent as Authorization: Bearer.
 * - Edits (set, add, delete, import, export) act on the selected node; the view changes only
 *   through the stream, so a refused write shows the server's error and changes nothing.
 *
 * Hooks for tests (kept stable):
 *   rows:       .row[data-path="/users/ada"] (the node in view included), with
 *               .key, .value (.v-string .v-number .v-boolean .v-null .v-object .v-pending;
 *               objects read as "{N children}", "{N+ children}" or "{…}" when not read),
 *               .priority, .row-error; highlight classes .added .changed .removed; .selected
 *   row buttons: [data-action=toggle] (expand/collapse), [data-action=select] (the key),
 *               [data-action=open] (make it the node in view), [data-action=more][data-path]
 *   page:       #banner, #status, #tree, #crumbs, #ns-select, #ns-input, #ns-go,
 *               #cred-button, #cred-form, #cred-input, #cred-save, #cred-clear, #cred-reason
 *   edit:       #sel-path, #sel-priority, #set-type, #set-value, #set-go, #add-name,
 *               #add-type, #add-value, #add-go, #delete-go, #import-file, #import-mode,
 *               #import-go, #export-go, #edit-status
 *   query:      #q-order, #q-child, #q-limit-kind, #q-limit, #q-start, #q-start-after,
 *               #q-end, #q-end-before, #q-equal,
 *               #q-run, #q-error, #q-indexes, #q-results > li[data-key]
 *   window.rtdbViewer: {state} for tests to read (e.g. state.connected, state.loaded).
 */
(() => {
  const PAGE = 200;            // keys per page of the node in view (and per level in memory)
  const HIGHLIGHT_MS = 1000;   // how long an added/changed/removed row stays highlighted
  const MAX_BACKOFF_MS = 2000;
  const SILENT_STREAM_MS = 75000;
  // The stream sends the loaded children whole. Past this much text in one event the node
  // in view is read a page at a time instead (not live): a child with millions of
  // descendants would otherwise fill the tab.
  const STREAM_LIMIT_CHARS = 4 * 1024 * 1024;
  const PROBE_AFTER_MS = 400;  // values not streamed by then are read one child at a time
  const PROBES_AT_ONCE = 4;
  const LONG_TEXT = 300;       // characters of a string shown in the tree    // browsers open about 6 connections per host; one is the stream

  const $ = (id) => document.getElementById(id);

  const state = {
    ns: "",
    credential: null,       // in memory only
    view: [],               // segments of the node in view
    data: null,             // the node in view: {v, p} leaf or {c: Map, p} object, or null
    viewPriority: null,
    pendingKeys: [],        // keys listed but whose values the stream has not sent yet
    windowSize: PAGE,
    hasMore: false,
    windowed: true,
    loaded: false,
    connected: false,
    generation: 0,
    controller: null,
    retryTimer: null,
    retryDelay: 0,
    expanded: new Set(),
    shown: new Map(),       // path -> children shown (levels below the node in view)
    selected: "/",
    marks: new Map(),       // path -> {cls, until}
    ghosts: new Map(),      // path -> {parent, key, node, until}
    errors: new Map(),      // path -> the server's error text for a refused write
    markTimer: null,
  };
  window.rtdbViewer = { state };

  // ---------------------------------------------------------------- paths and requests

  const pathOf = (segs) => "/" + segs.join("/");
  const segsOf = (path) => path.split("/").filter((s) => s !== "");
  const childPath = (path, key) => (path === "/" ? "/" + key : path + "/" + key);
  const parentOf = (path) => pathOf(segsOf(path).slice(0, -1));

  function restUrl(segs, params) {
    const q = new URLSearchParams();
    if (state.ns) q.set("ns", state.ns);
    for (const [k, v] of Object.entries(params || {})) q.set(k, v);
    const s = q.toString();
    return "/" + segs.map(encodeURIComponent).join("/") + ".json" + (s ? "?" + s : "");
  }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    if (state.credential) h.Authorization = "Bearer " + state.credential;
    return h;
  }

  /** One REST request: {ok, status, body (parsed JSON or text), error (the server's text)}. */
  async function api(method, segs, opts) {
    opts = opts || {};
    const init = { method, headers: headers(), cache: "no-store" };
    if (opts.body !== undefined) {
      init.body = JSON.stringify(opts.body);
      init.headers["Content-Type"] = "application/json";
    }
    const resp = await fetch(opts.url || restUrl(segs, opts.params), init);
    const text = await resp.text();
    let body = text;
    try { body = JSON.parse(text); } catch (e) { /* not JSON: keep the text */ }
    let error = null;
    if (!resp.ok) {
      error = body && typeof body === "object" && body.error !== undefined
        ? (typeof body.error === "string" ? body.error : JSON.stringify(body.error))
        : (text || resp.status + " " + resp.statusText);
    }
    return { ok: resp.ok, status: resp.status, body, error };
  }

  // ---------------------------------------------------------------- the data model

  /** A value in the export form ({".value", ".priority"}) as a node, or null. */
  function fromExport(x) {
    if (x === null || x === undefined) return null;
    if (typeof x !== "object") return { v: x, p: null };
    if (Array.isArray(x)) {
      const o = {};
      x.forEach((v, i) => { if (v !== null) o[i] = v; });
      x = o;
    }
    if (Object.prototype.hasOwnProperty.call(x, ".value")) {
      const p = x[".priority"];
      return { v: x[".value"], p: p === undefined ? null : p };
    }
    const c = new Map();
    let p = null;
    for (const k of Object.keys(x)) {
      if (k === ".priority") { p = x[k]; continue; }
      const n = fromExport(x[k]);
      if (n) c.set(k, n);
    }
    return c.size ? { c, p } : null;
  }

  /** The plain JSON value of a node (what a GET answers). */
  function toPlain(n) {
    if (!n) return null;
    if (!n.c) return n.v;
    const o = {};
    for (const k of sortedKeys(n)) o[k] = toPlain(n.c.get(k));
    return o;
  }

  function nodeAt(node, segs) {
    for (const s of segs) {
      if (!node || !node.c) return null;
      node = node.c.get(s) || null;
    }
    return node;
  }

  /** Sets the node at segs below root, pruning emptied objects; returns the new root. */
  function setAt(root, segs, node) {
    if (segs.length === 0) return node;
    let obj = root && root.c ? root : { c: new Map(), p: null };
    const [head, ...rest] = segs;
    const child = setAt(obj.c.get(head) || null, rest, node);
    if (child) obj.c.set(head, child); else obj.c.delete(head);
    obj.sorted = null;
    return obj.c.size ? obj : null;
  }

  const INT_KEY = /^-?(0|[1-9][0-9]{0,9})$/;
  function intKey(k) {
    if (!INT_KEY.test(k) || k === "-0") return null;
    const n = Number(k);
    return n >= -2147483648 && n <= 2147483647 ? n : null;
  }
  /** Firebase's key order: 32-bit integer keys numerically first, then strings. */
  function keyCompare(a, b) {
    const ia = intKey(a), ib = intKey(b);
    if (ia !== null && ib !== null) return ia - ib;
    if (ia !== null) return -1;
    if (ib !== null) return 1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  function sortedKeys(n) {
    if (!n || !n.c) return [];
    if (!n.sorted) n.sorted = Array.from(n.c.keys()).sort(keyCompare);
    return n.sorted;
  }

  function typeRank(v) {
    if (v === null || v === undefined) return 0;
    if (v === false) return 1;
    if (v === true) return 2;
    if (typeof v === "number") return 3;
    if (typeof v === "string") return 4;
    return 5;
  }
  /** Firebase's value order (orderByValue, orderByChild): null, false, true, numbers, strings, objects. */
  function valueCompare(a, b) {
    const ra = typeRank(a), rb = typeRank(b);
    if (ra !== rb) return ra - rb;
    if (ra === 3) return a - b;
    if (ra === 4) return a < b ? -1 : a > b ? 1 : 0;
    return 0;
  }
  /** Firebase's priority order: none, then numbers, then strings. */
  function priorityCompare(a, b) {
    const r = (p) => (p === null || p === undefined ? 0 : typeof p === "number" ? 1 : 2);
    if (r(a) !== r(b)) return r(a) - r(b);
    if (r(a) === 1) return a - b;
    if (r(a) === 2) return a < b ? -1 : a > b ? 1 : 0;
    return 0;
  }

  // ---------------------------------------------------------------- highlights

  function mark(path, cls) {
    state.marks.set(path, { cls, until: performance.now() + HIGHLIGHT_MS });
  }

  /** Records what changed between two versions of the subtree at path (rows to highlight). */
  function diff(path, before, after, parent, key) {
    if (!before && !after) return;
    if (!before) { mark(path, "added"); return; }
    if (!after) {
      mark(path, "removed");
      if (parent !== null) state.ghosts.set(path, { parent, key, node: before, until: performance.now() + HIGHLIGHT_MS });
      return;
    }
    if (!before.c || !after.c) {
      if (before.c || after.c || before.v !== after.v || before.p !== after.p) mark(path, "changed");
      return;
    }
    if (before.p !== after.p) mark(path, "changed");
    for (const [k, b] of before.c) diff(childPath(path, k), b, after.c.get(k) || null, path, k);
    for (const [k, a] of after.c) if (!before.c.has(k)) diff(childPath(path, k), null, a, path, k);
  }

  /** Marks the ancestors (up to the node in view) of what changed, so a closed node shows it. */
  function markAncestors(paths) {
    const top = pathOf(state.view);
    for (const p of paths) {
      let q = p;
      while (q !== top && q !== "/") {
        q = parentOf(q);
        if (!state.marks.has(q)) mark(q, "changed");
      }
    }
  }

  function scheduleMarkExpiry() {
    if (state.markTimer) return;
    state.markTimer = setTimeout(() => {
      state.markTimer = null;
      const now = performance.now();
      for (const [p, m] of state.marks) if (m.until <= now) state.marks.delete(p);
      for (const [p, g] of state.ghosts) if (g.until <= now) state.ghosts.delete(p);
      render();
      if (state.marks.size || state.ghosts.size) scheduleMarkExpiry();
    }, HIGHLIGHT_MS + 50);
  }

  // ---------------------------------------------------------------- the stream

  /** Applies one put or patch (paths relative to the node in view). */
  function applyEvent(kind, msg, initial) {
    const base = segsOf(msg.path || "/");
    const changes = [];
    if (kind === "put") {
      changes.push([base, fromExport(msg.data)]);
    } else {
      for (const k of Object.keys(msg.data || {})) changes.push([base.concat(segsOf(k)), fromExport(msg.data[k])]);
    }
    const top = pathOf(state.view);
    const before = state.data;
    const oldCount = before && before.c ? before.c.size : 0;
    const oldLast = before && before.c ? sortedKeys(before)[oldCount - 1] : undefined;
    const full = state.windowed && oldCount >= state.windowSize;
    const markedBefore = new Set(state.marks.keys());
    for (const [segs, node] of changes) {
      const old = nodeAt(state.data, segs);
      state.data = setAt(state.data, segs, node);
      if (initial) continue;
      const p = segs.length ? segsOf(top).concat(segs) : segsOf(top);
      const path = pathOf(p);
      if (segs.length === 0 && old && node && old.c && node.c) {
        diffWindow(top, old, node, full, oldLast);
      } else if (segs.length === 1 && full && windowShift(segs[0], old, node, oldLast)) {
        // a child entering or leaving the window's end: not a change of the data
      } else {
        diff(path, old, node, segs.length ? pathOf(p.slice(0, -1)) : null, segs[segs.length - 1]);
      }
    }
    if (!initial) {
      markAncestors(Array.from(state.marks.keys()).filter((p) => !markedBefore.has(p)));
      if (state.marks.size) scheduleMarkExpiry();
    }
    if (state.data && state.data.c) {
      const have = state.data.c;
      state.pendingKeys = state.pendingKeys.filter((k) => !have.has(k));
    }
  }

  /** With limitToFirst = N and N children shown, a key past the last one loaded that enters
   *  (another was removed) or a last key that leaves (one was added before it) only moves
   *  the window's end. */
  function windowShift(key, old, node, oldLast) {
    if (oldLast === undefined) return false;
    if (!old && node && keyCompare(key, oldLast) > 0) return true;
    if (old && !node && key === oldLast) { state.hasMore = true; return true; }
    return false;
  }

  function diffWindow(top, before, after, full, oldLast) {
    if (before.p !== after.p) mark(top, "changed");
    for (const [k, b] of before.c) {
      const a = after.c.get(k) || null;
      if (!a && full && k === oldLast) { state.hasMore = true; continue; }
      diff(childPath(top, k), b, a, top, k);
    }
    for (const [k, a] of after.c) {
      if (before.c.has(k)) continue;
      if (full && oldLast !== undefined && keyCompare(k, oldLast) > 0) continue;
      diff(childPath(top, k), null, a, top, k);
    }
  }

  function parseSSE(block) {
    let event = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? "" : line.slice(i + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    return { event, data: data.join("\n") };
  }

  async function runStream(gen) {
    const params = { format: "export" };
    if (state.windowed) {
      params.orderBy = '"$key"';
      params.limitToFirst = String(state.windowSize);
    }
    const controller = new AbortController();
    state.controller = controller;
    let resp;
    try {
      resp = await fetch(restUrl(state.view, params), {
        headers: headers({ Accept: "text/event-stream" }), cache: "no-store", signal: controller.signal,
      });
    } catch (e) {
      if (gen === state.generation) disconnected();
      return;
    }
    if (gen !== state.generation) { controller.abort(); return; }
    if (resp.status === 401 || resp.status === 403) {
      needCredential(state.credential ? "The credential was refused." : "This database needs a credential.");
      return;
    }
    if (!resp.ok) {
      let text = await resp.text().catch(() => "");
      try { text = JSON.parse(text).error || text; } catch (e) { /* keep text */ }
      setStatus("the stream was refused: " + text);
      return;
    }
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let initial = true;
    // The server sends a keep-alive after 30 s of quiet: a stream silent for much longer
    // lost its connection without being told (a network gone, a machine asleep).
    let heard = Date.now();
    const watchdog = setInterval(() => {
      if (Date.now() - heard > SILENT_STREAM_MS) controller.abort();
    }, 5000);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || gen !== state.generation) break;
        heard = Date.now();
        buf += value;
        let m;
        let changed = false;
        while ((m = /\r?\n\r?\n/.exec(buf))) {
          if (m.index > STREAM_LIMIT_CHARS) { buf = null; break; }
          const block = buf.slice(0, m.index);
          buf = buf.slice(m.index + m[0].length);
          const ev = parseSSE(block);
          if (ev.event === "put" || ev.event === "patch") {
            let msg;
            try { msg = JSON.parse(ev.data); } catch (e) { continue; }
            applyEvent(ev.event, msg, initial);
            // An empty window may be a leaf: the listing then says so (and shows it).
            if (initial) { if (state.data || state.listed) state.loaded = true; connected(); }
            initial = false;
            changed = true;
          } else if (ev.event === "keep-alive") {
            state.lastKeepAlive = Date.now();
          } else if (ev.event === "cancel") {
            showBanner("The server cancelled the live view: " + safeText(ev.data) + " (reload to try again)", "cancelled");
            state.cancelled = true;
          } else if (ev.event === "auth_revoked") {
            showBanner("The credential was revoked: " + safeText(ev.data), "revoked");
            needCredential("The credential is no longer valid; enter a new one.");
          }
        }
        if (changed) render();
        if (buf === null || buf.length > STREAM_LIMIT_CHARS) { controller.abort(); goStatic(gen); break; }
      }
    } catch (e) {
      // the connection broke (or was aborted for a newer view, or by the watchdog)
    }
    clearInterval(watchdog);
    if (gen === state.generation && !state.cancelled && !state.needsCredential && !state.staticView) disconnected();
  }

  // ---------------------------------------------------------------- reading without the stream

  /** The node in view is too large to follow: its children are read a page at a time. */
  function goStatic(gen) {
    state.staticView = true;
    state.connected = true;
    showBanner("Not live: the first " + state.windowSize + " children of " + pathOf(state.view)
      + " hold more than 4 MB, so they are read a page at a time and changes are not followed."
      + " Open a smaller node to follow it live.", "static");
    probePending(gen);
  }

  /** One child, bounded: a leaf's value, or an object whose children are not read yet. */
  async function probe(segs) {
    const r = await api("GET", segs, { params: { shallow: "true", orderBy: '"$key"', limitToFirst: "1" } });
    if (!r.ok) throw new Error(r.error);
    const b = r.body;
    if (b === null) return null;
    if (typeof b === "object") return { c: new Map(), p: null, unread: true };
    return { v: b, p: null };
  }

  async function probeAll(parentSegs, keys, gen, put) {
    let next = 0;
    const worker = async () => {
      while (next < keys.length && gen === state.generation) {
        const k = keys[next++];
        let node;
        try { node = await probe(parentSegs.concat([k])); } catch (e) { continue; }
        if (gen === state.generation) put(k, node);
      }
    };
    await Promise.all(Array.from({ length: PROBES_AT_ONCE }, worker));
  }

  /** Values for the listed children the stream has not brought (yet, or at all). */
  async function probePending(gen) {
    const keys = state.pendingKeys.slice();
    await probeAll(state.view, keys, gen, (k, node) => {
      if (state.data && state.data.c && state.data.c.has(k)) return;  // the stream was first
      if (node) state.data = setAt(state.data, [k], node);
      state.pendingKeys = state.pendingKeys.filter((x) => x !== k);
      scheduleRender();
    });
    if (gen !== state.generation || !state.staticView) return;
    // Reopen what was open (after a reload of a node read without the stream).
    for (const path of Array.from(state.expanded).sort((a, b) => a.length - b.length)) {
      const n = nodeAt(state.data, segsOf(path).slice(state.view.length));
      if (n && n.unread) await loadLevel(path);
    }
  }

  /** A page of a node's children read without the stream (and after `after`, for "more"). */
  async function loadLevel(path, after) {
    const gen = state.generation;
    const segs = segsOf(path);
    const node = nodeAt(state.data, segs.slice(state.view.length));
    if (!node || !node.c) return;
    const params = { shallow: "true", orderBy: '"$key"', limitToFirst: String(PAGE) };
    if (after !== undefined) params.startAfter = JSON.stringify(after);
    let r;
    try { r = await api("GET", segs, { params }); } catch (e) { setStatus("the server cannot be reached"); return; }
    if (gen !== state.generation) return;
    if (!r.ok) { setStatus("cannot read " + path + ": " + r.error); return; }
    const keys = listedKeys(r.body);
    node.unread = false;
    node.paged = true;
    node.more = keys.length >= PAGE;
    await probeAll(segs, keys, gen, (k, child) => {
      if (child) { node.c.set(k, child); node.sorted = null; }
      scheduleRender();
    });
    render();
  }

  function scheduleRender() {
    if (state.renderTimer) return;
    state.renderTimer = setTimeout(() => { state.renderTimer = null; render(); }, 16);
  }

  function safeText(data) {
    try { const v = JSON.parse(data); return typeof v === "string" ? v : JSON.stringify(v); } catch (e) { return data; }
  }

  function connected() {
    state.connected = true;
    state.retryDelay = 0;
    if (state.bannerKind === "disconnected") hideBanner();
  }

  function disconnected() {
    state.connected = false;
    showBanner("disconnected — reconnecting…", "disconnected");
    if (state.retryTimer) return;
    state.retryDelay = Math.min(MAX_BACKOFF_MS, state.retryDelay ? state.retryDelay * 2 : 250);
    state.retryTimer = setTimeout(() => {
      state.retryTimer = null;
      loadView(true);
    }, state.retryDelay);
  }

  // ---------------------------------------------------------------- loading a view

  /** The keys of a shallow listing. Integer keys may come as a JSON array, whose null
   *  entries are holes, not children. */
  function listedKeys(listing) {
    if (Array.isArray(listing)) {
      const keys = [];
      listing.forEach((v, i) => { if (v !== null) keys.push(String(i)); });
      return keys;
    }
    return listing !== null && typeof listing === "object" ? Object.keys(listing).sort(keyCompare) : [];
  }

  async function loadView(keepOpen) {
    const gen = ++state.generation;
    if (state.controller) state.controller.abort();
    state.cancelled = false;
    if (!keepOpen) {
      state.staticView = false;
      state.expanded.clear();
      state.shown.clear();
      state.selected = pathOf(state.view);
      state.marks.clear();
      state.ghosts.clear();
      state.errors.clear();
      state.windowSize = PAGE;
      state.data = null;
      state.loaded = false;
    }
    renderCrumbs();
    // The first page of keys and the stream start together: the stream's first put brings
    // the values, the page says whether there are more keys (and whether the node is a
    // leaf, which the stream then follows unwindowed).
    if (!keepOpen) state.windowed = true;
    state.listed = false;
    if (state.staticView) state.data = null;  // read again, a page at a time
    const listed = api("GET", state.view, { params: { shallow: "true", orderBy: '"$key"', limitToFirst: String(state.windowSize) } });
    if (!state.staticView) runStream(gen);
    loadPriority(gen);
    let page;
    try {
      page = await listed;
    } catch (e) {
      if (gen === state.generation) disconnected();
      return;
    }
    if (gen !== state.generation) return;
    if (page.status === 401 || page.status === 403) {
      state.data = null;
      state.loaded = false;
      render();
      needCredential(state.credential ? "The credential was refused: " + page.error : "This database needs a credential (" + page.error + ").");
      return;
    }
    if (!page.ok) {
      setStatus("cannot read " + pathOf(state.view) + ": " + page.error);
      return;
    }
    state.needsCredential = false;
    $("cred-form").hidden = true;
    setStatus("");
    const listing = page.body;
    const windowed = listing === null || typeof listing === "object";
    const keys = listedKeys(listing);
    state.hasMore = keys.length >= state.windowSize;
    state.pendingKeys = keys.filter((k) => !(state.data && state.data.c && state.data.c.has(k)));
    state.listed = true;
    state.loaded = true;
    render();
    setTimeout(() => { if (gen === state.generation && state.pendingKeys.length) probePending(gen); },
               state.staticView ? 0 : PROBE_AFTER_MS);
    if (windowed !== state.windowed && !state.staticView) {
      // A leaf: its stream is the plain one (a key window of a leaf is empty).
      state.windowed = windowed;
      const again = ++state.generation;
      if (state.controller) state.controller.abort();
      runStream(again);
    }
  }

  async function loadPriority(gen) {
    try {
      const r = await api("GET", state.view.concat([".priority"]));
      if (gen !== state.generation) return;
      state.viewPriority = r.ok ? r.body : null;
      render();
    } catch (e) { /* the stream reports a lost server */ }
  }

  /** The next page of the node in view's keys; the stream then widens to cover them. */
  async function more() {
    const keys = sortedKeys(state.data).concat(state.pendingKeys).sort(keyCompare);
    const last = keys[keys.length - 1];
    const params = { shallow: "true", orderBy: '"$key"', limitToFirst: String(PAGE) };
    if (last !== undefined) params.startAfter = JSON.stringify(last);
    let page;
    try { page = await api("GET", state.view, { params }); } catch (e) { disconnected(); return; }
    if (!page.ok) { setStatus("cannot read more: " + page.error); return; }
    const next = listedKeys(page.body);
    state.hasMore = next.length >= PAGE;
    if (!next.length) { render(); return; }
    state.pendingKeys = state.pendingKeys.concat(next);
    state.windowSize = keys.length + next.length;
    if (state.staticView) { render(); probePending(state.generation); return; }
    const gen = ++state.generation;
    if (state.controller) state.controller.abort();
    render();
    runStream(gen);
    setTimeout(() => { if (gen === state.generation && state.pendingKeys.length) probePending(gen); }, PROBE_AFTER_MS);
  }

  // ---------------------------------------------------------------- rendering

  function valueText(n) {
    if (!n) return ["null", "v-null"];
    if (n.unread) return ["{…}", "v-object"];
    if (n.more) return ["{" + n.c.size + "+ children}", "v-object"];
    if (n.c) return ["{" + n.c.size + (n.c.size === 1 ? " child}" : " children}"), "v-object"];
    const v = n.v;
    if (v === null) return ["null", "v-null"];
    if (typeof v === "string") {
      // A long text shows its start (export or select it for the whole).
      const t = JSON.stringify(v);
      return [t.length > LONG_TEXT ? t.slice(0, LONG_TEXT) + "… (" + v.length + " characters)" : t, "v-string"];
    }
    if (typeof v === "number") return [String(v), "v-number"];
    if (typeof v === "boolean") return [String(v), "v-boolean"];
    return [JSON.stringify(v), "v-object"];
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function button(text, action, path, label) {
    const b = el("button", "act act-" + action, text);
    b.type = "button";
    b.dataset.action = action;
    b.dataset.path = path;
    if (label) b.setAttribute("aria-label", label);
    return b;
  }

  function renderRow(path, key, node, depth, opts) {
    const li = el("li", "node");
    li.setAttribute("role", "treeitem");
    li.setAttribute("aria-level", String(depth + 1));
    const row = el("div", "row");
    row.dataset.path = path;
    const isObject = !!(node && node.c) || opts.pending === "object";
    const open = opts.isView || state.expanded.has(path);
    if (isObject) {
      li.setAttribute("aria-expanded", String(open));
      if (!opts.isView) row.append(button(open ? "▾" : "▸", "toggle", path, (open ? "collapse " : "expand ") + path));
      else row.append(el("span", "toggle-space", "▾"));
    } else {
      row.append(el("span", "toggle-space", ""));
    }
    const keyButton = button(key, "select", path, "select " + path);
    keyButton.classList.add("key");
    row.append(keyButton);
    if (opts.pending) {
      row.append(el("span", "value v-pending", "…"));
    } else {
      const [text, cls] = valueText(node);
      row.append(el("span", "value " + cls, text));
    }
    const priority = opts.isView ? state.viewPriority : node && node.p;
    if (priority !== null && priority !== undefined) row.append(el("span", "priority", "priority " + JSON.stringify(priority)));
    if (isObject && !opts.isView) row.append(button("open", "open", path, "open " + path));
    const m = state.marks.get(path);
    if (m && m.until > performance.now()) row.classList.add(m.cls);
    if (opts.ghost) row.classList.add("removed");
    if (state.selected === path) { row.classList.add("selected"); li.setAttribute("aria-selected", "true"); }
    const err = state.errors.get(path);
    if (err) row.append(el("span", "row-error", err));
    li.append(row);
    if (isObject && open && !opts.ghost) li.append(renderChildren(path, node, depth + 1, opts.isView));
    return li;
  }

  function renderChildren(path, node, depth, isView) {
    const ul = el("ul", "children");
    ul.setAttribute("role", "group");
    const keys = sortedKeys(node);
    const ghosts = [];
    for (const g of state.ghosts.values()) if (g.parent === path && !(node && node.c && node.c.has(g.key))) ghosts.push(g);
    let list = keys;
    let limit = isView || (node && node.paged) ? Infinity : (state.shown.get(path) || PAGE);
    const pending = isView ? state.pendingKeys.filter((k) => !(node && node.c && node.c.has(k))) : [];
    if (ghosts.length || pending.length) {
      list = keys.concat(ghosts.map((g) => g.key), pending).sort(keyCompare);
    }
    const ghostBy = new Map(ghosts.map((g) => [g.key, g]));
    const pendingSet = new Set(pending);
    let n = 0;
    for (const k of list) {
      if (n >= limit) break;
      n++;
      const p = childPath(path, k);
      const g = ghostBy.get(k);
      if (g && !(node && node.c && node.c.has(k))) ul.append(renderRow(p, k, g.node, depth, { ghost: true }));
      else if (pendingSet.has(k)) ul.append(renderRow(p, k, null, depth, { pending: "value" }));
      else ul.append(renderRow(p, k, node.c.get(k), depth, {}));
    }
    if ((isView && state.hasMore) || (!isView && (list.length > limit || (node && node.more)))) {
      const li = el("li", "more");
      const left = isView || (node && node.paged) ? "" : " (" + (list.length - limit) + " left)";
      li.append(button("more…" + left, "more", path, "more children of " + path));
      ul.append(li);
    }
    return ul;
  }

  function render() {
    const active = document.activeElement;
    const focus = active && active.dataset && active.dataset.action
      ? { action: active.dataset.action, path: active.dataset.path } : null;
    const tree = $("tree");
    if (!state.loaded) {
      tree.replaceChildren();
    } else {
      const top = pathOf(state.view);
      const label = state.view.length ? state.view[state.view.length - 1] : "/";
      const pending = !state.data && state.pendingKeys.length ? "object" : null;
      // Before the stream's first put, the listed keys show with their values pending.
      tree.replaceChildren(renderRow(top, label, state.data, 0, { isView: true, pending }));
    }
    if (focus) {
      const again = tree.querySelector('[data-action="' + focus.action + '"][data-path="' + cssEscape(focus.path) + '"]');
      if (again) again.focus();
    }
    renderSelection();
  }

  function cssEscape(s) { return window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/["\\]/g, "\\$&"); }

  function renderCrumbs() {
    const nav = $("crumbs");
    nav.replaceChildren();
    const parts = [["/", []]];
    state.view.forEach((s, i) => parts.push([s, state.view.slice(0, i + 1)]));
    parts.forEach(([label, segs], i) => {
      if (i > 0) nav.append(el("span", "sep", "/"));
      const a = el("a", "crumb", label);
      a.href = hashOf(segs);
      if (i === parts.length - 1) a.setAttribute("aria-current", "location");
      nav.append(a);
    });
    const ns = el("span", "ns-name", " — namespace " + (state.ns || "(server default)"));
    nav.append(ns);
  }

  function selectedNode() {
    const segs = segsOf(state.selected);
    const top = state.view;
    const rel = segs.slice(top.length);
    return nodeAt(state.data, rel);
  }

  function renderSelection() {
    $("sel-path").textContent = state.selected;
    const n = selectedNode();
    const p = state.selected === pathOf(state.view) ? state.viewPriority : n && n.p;
    $("sel-priority").textContent = p === null || p === undefined ? "none" : JSON.stringify(p);
  }

  function setStatus(text) { $("status").textContent = text; }

  function showBanner(text, kind) {
    const b = $("banner");
    b.textContent = text;
    b.className = "banner banner-" + kind;
    b.hidden = false;
    state.bannerKind = kind;
  }
  function hideBanner() {
    $("banner").hidden = true;
    state.bannerKind = null;
  }

  // ---------------------------------------------------------------- the credential

  function needCredential(reason) {
    state.needsCredential = true;
    $("cred-reason").textContent = reason;
    $("cred-form").hidden = false;
    setStatus("Nothing is shown without a credential.");
    $("cred-input").focus();
  }

  // ---------------------------------------------------------------- edits

  /** The typed value of a (type, text) pair, or throws with a message. */
  function typedValue(type, text) {
    switch (type) {
      case "string": return text;
      case "number": {
        const n = Number(text);
        if (text.trim() === "" || !Number.isFinite(n)) throw new Error("not a number: " + JSON.stringify(text));
        return n;
      }
      case "boolean":
        if (text.trim() === "true") return true;
        if (text.trim() === "false") return false;
        throw new Error("a boolean is true or false");
      case "null": return null;
      case "json":
        try { return JSON.parse(text); } catch (e) { throw new Error("not JSON: " + e.message); }
      default: throw new Error("unknown type " + type);
    }
  }

  function editStatus(text, path, isError) {
    $("edit-status").textContent = text;
    $("edit-status").className = isError ? "error" : "";
    if (path) {
      if (isError) state.errors.set(path, text); else state.errors.delete(path);
      render();
    }
  }

  async function write(method, segs, body, label) {
    const path = pathOf(segs);
    let r;
    try {
      r = await api(method, segs, { body });
    } catch (e) {
      editStatus(label + " failed: the server cannot be reached", path, true);
      return null;
    }
    if (!r.ok) {
      editStatus(label + " refused: " + r.error, state.selected, true);
      return null;
    }
    editStatus(label + " done", state.selected, false);
    if (state.staticView) loadView(true);  // no stream to bring the change: read it again
    if (path === pathOf(state.view) || path.startsWith(pathOf(state.view) + "/.priority")) loadPriority(state.generation);
    return r;
  }

  async function onSet() {
    let v;
    try { v = typedValue($("set-type").value, $("set-value").value); } catch (e) { editStatus(e.message, state.selected, true); return; }
    await write("PUT", segsOf(state.selected), v, "set " + state.selected);
  }

  async function onAdd() {
    let v;
    try { v = typedValue($("add-type").value, $("add-value").value); } catch (e) { editStatus(e.message, state.selected, true); return; }
    const name = $("add-name").value;
    const segs = segsOf(state.selected);
    if (name === "") {
      const r = await write("POST", segs, v, "push under " + state.selected);
      if (r && r.body && r.body.name) editStatus("added " + childPath(state.selected, r.body.name), null, false);
    } else {
      if (/[.#$\[\]\/]/.test(name) || /[\x00-\x1f\x7f]/.test(name)) {
        editStatus("a key cannot contain . # $ [ ] / or control characters", state.selected, true);
        return;
      }
      await write("PUT", segs.concat([name]), v, "add " + childPath(state.selected, name));
    }
    const open = state.selected;
    if (open !== pathOf(state.view)) { state.expanded.add(open); render(); }
  }

  async function onDelete() {
    const path = state.selected;
    const n = selectedNode();
    let count;
    if (!n) count = "no value";
    else if (!n.c) count = "a value, no children";
    else if (n.unread) count = "its children, not counted";
    else {
      const c = n.c.size;
      const more = (path === pathOf(state.view) && state.hasMore) || n.more;
      count = (more ? "at least " : "") + c + (c === 1 ? " child" : " children");
    }
    if (!window.confirm("Delete " + path + " (" + count + ")?")) return;
    const r = await write("DELETE", segsOf(path), undefined, "delete " + path);
    if (r && path !== pathOf(state.view)) { state.selected = parentOf(path); render(); }
  }

  async function onImport() {
    const file = $("import-file").files[0];
    if (!file) { editStatus("choose a JSON file first", null, true); return; }
    let value;
    try { value = JSON.parse(await file.text()); } catch (e) { editStatus(file.name + " is not JSON: " + e.message, state.selected, true); return; }
    const merge = $("import-mode").value === "merge";
    if (merge && (value === null || typeof value !== "object" || Array.isArray(value))) {
      editStatus("merging needs a JSON object", state.selected, true);
      return;
    }
    await write(merge ? "PATCH" : "PUT", segsOf(state.selected), value, (merge ? "merge " : "import ") + file.name + " into " + state.selected);
  }

  async function onExport() {
    const segs = segsOf(state.selected);
    let r;
    try { r = await api("GET", segs); } catch (e) { editStatus("export failed: the server cannot be reached", null, true); return; }
    if (!r.ok) { editStatus("export refused: " + r.error, state.selected, true); return; }
    const blob = new Blob([JSON.stringify(r.body, null, 2) + "\n"], { type: "application/json" });
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = (segs.length ? segs[segs.length - 1] : "root") + ".json";
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    editStatus("exported " + state.selected + " as " + a.download, null, false);
  }

  // ---------------------------------------------------------------- query

  async function onQuery() {
    const order = $("q-order").value;
    const params = { format: "export" };
    const err = $("q-error");
    err.textContent = "";
    let childSegs = [];
    if (order === "key") params.orderBy = '"$key"';
    else if (order === "value") params.orderBy = '"$value"';
    else if (order === "priority") params.orderBy = '"$priority"';
    else {
      const c = $("q-child").value.trim();
      if (!c) { err.textContent = "name the child to order by"; return; }
      params.orderBy = JSON.stringify(c);
      childSegs = segsOf(c);
    }
    const kind = $("q-limit-kind").value;
    if (kind) {
      const n = Number($("q-limit").value);
      if (!Number.isInteger(n) || n < 1) { err.textContent = "the limit is a positive whole number"; return; }
      params[kind === "first" ? "limitToFirst" : "limitToLast"] = String(n);
    }
    for (const [id, name] of [["q-start", "startAt"], ["q-start-after", "startAfter"], ["q-end", "endAt"],
                              ["q-end-before", "endBefore"], ["q-equal", "equalTo"]]) {
      const t = $(id).value.trim();
      if (!t) continue;
      try { JSON.parse(t); } catch (e) { err.textContent = name + " is not JSON: " + t; return; }
      params[name] = t;
    }
    let r;
    try { r = await api("GET", state.view, { params }); } catch (e) { err.textContent = "the server cannot be reached"; return; }
    const ol = $("q-results");
    ol.replaceChildren();
    if (!r.ok) { err.textContent = "query refused: " + r.error; return; }
    const node = fromExport(r.body);
    const keys = node && node.c ? Array.from(node.c.keys()) : [];
    const sortValue = (k) => {
      const c = node.c.get(k);
      if (order === "value") return c.c ? undefined : c.v;
      if (order === "priority") return c.p;
      const d = nodeAt(c, childSegs);
      return d && !d.c ? d.v : d ? {} : null;
    };
    keys.sort((a, b) => {
      let d = 0;
      if (order === "priority") d = priorityCompare(sortValue(a), sortValue(b));
      else if (order !== "key") d = valueCompare(sortValue(a) === undefined ? {} : sortValue(a), sortValue(b) === undefined ? {} : sortValue(b));
      return d || keyCompare(a, b);
    });
    for (const k of keys) {
      const li = el("li", "q-row");
      li.dataset.key = k;
      const c = node.c.get(k);
      const [text, cls] = valueText(c);
      li.append(el("span", "key", k), el("span", "value " + cls, c.c ? JSON.stringify(toPlain(c)) : text));
      if (c.p !== null && c.p !== undefined) li.append(el("span", "priority", "priority " + JSON.stringify(c.p)));
      ol.append(li);
    }
    err.textContent = keys.length + (keys.length === 1 ? " child" : " children") + " in the window";
  }

  /** The .indexOn the rules declare for the node in view (rules are readable by admins only). */
  async function loadIndexes() {
    const out = $("q-indexes");
    let r;
    try { r = await api("GET", [], { url: "/.settings/rules.json?" + new URLSearchParams(Object.assign({ format: "strict" }, state.ns ? { ns: state.ns } : {})) }); } catch (e) { out.textContent = "rules not readable"; return; }
    if (!r.ok || typeof r.body !== "object" || r.body === null) { out.textContent = "rules not readable"; return; }
    let node = r.body.rules;
    for (const s of state.view) {
      if (!node || typeof node !== "object") { node = null; break; }
      if (Object.prototype.hasOwnProperty.call(node, s)) { node = node[s]; continue; }
      const wild = Object.keys(node).find((k) => k.startsWith("$"));
      node = wild ? node[wild] : null;
    }
    const idx = node && typeof node === "object" ? node[".indexOn"] : undefined;
    out.textContent = idx === undefined ? "none declared" : Array.isArray(idx) ? idx.join(", ") : String(idx);
  }

  // ---------------------------------------------------------------- namespaces

  async function loadNamespaces() {
    const select = $("ns-select");
    let r;
    try { r = await api("GET", [], { url: "/.inspect/databases.json" }); } catch (e) { return; }
    const names = r.ok && Array.isArray(r.body) ? r.body.map((d) => d && d.name).filter((n) => typeof n === "string") : [];
    if (!names.length) { select.hidden = true; $("ns-select-label").hidden = true; return; }
    select.replaceChildren();
    const def = el("option", "", "(server default)");
    def.value = "";
    select.append(def);
    for (const n of names) {
      const o = el("option", "", n);
      o.value = n;
      select.append(o);
    }
    select.value = names.includes(state.ns) ? state.ns : "";
    select.hidden = false;
    $("ns-select-label").hidden = false;
  }

  function switchNamespace(ns) {
    ns = ns.trim();
    if (ns && !/^[A-Za-z0-9_-]{1,63}$/.test(ns)) { setStatus("a namespace is 1–63 letters, digits, - and _"); return; }
    if (ns === state.ns) return;
    const q = new URLSearchParams(location.search);
    if (ns) q.set("ns", ns); else q.delete("ns");
    const s = q.toString();
    history.pushState(null, "", location.pathname + (s ? "?" + s : "") + location.hash);
    fromLocation();
  }

  // ---------------------------------------------------------------- navigation

  function hashOf(segs) { return "#/" + segs.map(encodeURIComponent).join("/"); }

  function viewFromHash() {
    const h = location.hash.replace(/^#/, "");
    try { return segsOf(h).map(decodeURIComponent); } catch (e) { return segsOf(h); }
  }

  function fromLocation() {
    const ns = new URLSearchParams(location.search).get("ns") || "";
    const view = viewFromHash();
    const nsChanged = ns !== state.ns;
    if (!nsChanged && pathOf(view) === pathOf(state.view) && state.generation > 0) return;
    state.ns = ns;
    $("ns-input").value = ns;
    state.view = view;
    loadView(false);
    loadIndexes();
    if (nsChanged) loadNamespaces();
  }

  function openNode(path) { location.hash = hashOf(segsOf(path)); }

  // ---------------------------------------------------------------- wiring

  /** Opens a node in the tree (its children are read first when they were not). */
  function expand(path) {
    state.expanded.add(path);
    const n = nodeAt(state.data, segsOf(path).slice(state.view.length));
    if (n && n.unread) loadLevel(path);
    render();
  }

  function onTreeClick(e) {
    const b = e.target.closest("button[data-action]");
    if (!b) return;
    const path = b.dataset.path;
    switch (b.dataset.action) {
      case "toggle":
        if (state.expanded.has(path)) { state.expanded.delete(path); render(); } else expand(path);
        break;
      case "select": {
        state.selected = path;
        const n = selectedNode();
        if (n && !n.c) {
          const v = n.v;
          $("set-type").value = v === null ? "null" : typeof v === "object" ? "json" : typeof v;
          $("set-value").value = typeof v === "string" ? v : JSON.stringify(v);
        }
        render();
        break;
      }
      case "open": openNode(path); break;
      case "more": {
        const n = nodeAt(state.data, segsOf(path).slice(state.view.length));
        if (path === pathOf(state.view)) more();
        else if (n && n.more) loadLevel(path, sortedKeys(n)[n.c.size - 1]);
        else { state.shown.set(path, (state.shown.get(path) || PAGE) + PAGE); render(); }
        break;
      }
    }
  }

  /** Arrow keys in the tree: up and down move between rows, right opens, left closes (or
   *  goes to the parent), as in other tree views. Enter and space press the focused button. */
  function onTreeKey(e) {
    const b = e.target.closest("button[data-action]");
    if (!b || !["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End"].includes(e.key)) return;
    const keys = Array.from($("tree").querySelectorAll("button[data-action=select]"));
    const path = b.dataset.path;
    const at = keys.findIndex((k) => k.dataset.path === path);
    const focusPath = (p) => {
      const k = $("tree").querySelector('button[data-action=select][data-path="' + cssEscape(p) + '"]');
      if (k) k.focus();
    };
    e.preventDefault();
    if (e.key === "ArrowDown" && at + 1 < keys.length) keys[at + 1].focus();
    else if (e.key === "ArrowUp" && at > 0) keys[at - 1].focus();
    else if (e.key === "Home" && keys.length) keys[0].focus();
    else if (e.key === "End" && keys.length) keys[keys.length - 1].focus();
    else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      const openNow = state.expanded.has(path);
      const toggles = !!$("tree").querySelector('button[data-action=toggle][data-path="' + cssEscape(path) + '"]');
      if (e.key === "ArrowRight" && toggles && !openNow) { expand(path); focusPath(path); }
      else if (e.key === "ArrowLeft" && toggles && openNow) { state.expanded.delete(path); render(); focusPath(path); }
      else if (e.key === "ArrowLeft" && path !== pathOf(state.view)) focusPath(parentOf(path));
    }
  }

  function start() {
    $("tree").addEventListener("click", onTreeClick);
    $("tree").addEventListener("keydown", onTreeKey);
    $("set-go").addEventListener("click", onSet);
    $("add-go").addEventListener("click", onAdd);
    $("delete-go").addEventListener("click", onDelete);
    $("import-go").addEventListener("click", onImport);
    $("export-go").addEventListener("click", onExport);
    $("q-run").addEventListener("click", onQuery);
    $("ns-go").addEventListener("click", () => switchNamespace($("ns-input").value));
    $("ns-input").addEventListener("keydown", (e) => { if (e.key === "Enter") switchNamespace($("ns-input").value); });
    $("ns-select").addEventListener("change", () => switchNamespace($("ns-select").value));
    $("cred-button").addEventListener("click", () => {
      const f = $("cred-form");
      f.hidden = !f.hidden;
      if (!f.hidden) { $("cred-reason").textContent = "Send a credential with every request."; $("cred-input").focus(); }
    });
    $("cred-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const v = $("cred-input").value;
      state.credential = v === "" ? null : v;
      $("cred-input").value = "";
      $("cred-form").hidden = true;
      state.needsCredential = false;
      loadView(false);
      loadIndexes();
      loadNamespaces();
    });
    $("cred-clear").addEventListener("click", () => {
      state.credential = null;
      $("cred-input").value = "";
      $("cred-form").hidden = true;
      loadView(false);
      loadIndexes();
      loadNamespaces();
    });
    window.addEventListener("hashchange", fromLocation);
    window.addEventListener("popstate", fromLocation);
    state.ns = null;  // so the first fromLocation loads everything
    fromLocation();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
