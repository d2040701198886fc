/**
 * The inspector's behaviour, as page JS: the session list, the open session (metadata, journal
 * timeline via Replay, turns via Exec, chain verification) and the lifecycle buttons. Methods the
 * host does not serve yet answer `unimplemented`; their buttons just show the server's message.
 * Uses UI_CANON_JS, UI_RPC_JS and UI_VIEW_JS; inlined by ui-page.ts.
 * Written without backticks or "${" because it lives inside a template literal.
 * @internal
 */
export const UI_APP_JS = String.raw`
const PAGE_SIZE = 25;
const UID_PATTERN = /^sess-[0-9a-f]{24}$/;

const state = {
  project: "default", // the project the list shows
  sessions: [], // the list's pages so far, in server order
  nextPageToken: "",
  session: null, // the open session
  records: [], // its journal, from Replay and then the live turn
  loaded: false, // records hold the whole journal, so their last seq is the head
  turn: null, // {uid, executionId} while a turn streams
};

function openUid() {
  return state.session && state.session.metadata ? state.session.metadata.uid : "";
}

// ---- session list

async function listSessions(fromStart) {
  if (fromStart) {
    state.project = byId("project").value.trim() || "default";
    state.sessions = [];
    state.nextPageToken = "";
  }
  try {
    const page = await unary("ListSessions", { project: state.project, pageSize: PAGE_SIZE, pageToken: state.nextPageToken });
    state.sessions = state.sessions.concat(page.sessions || []);
    state.nextPageToken = page.nextPageToken || "";
  } catch (err) {
    showError("ListSessions", err);
  }
  renderSessions();
}

function renderSessions() {
  const body = byId("sessions").tBodies[0];
  body.replaceChildren();
  for (const s of state.sessions) body.appendChild(sessionRow(s, s.metadata && s.metadata.uid === openUid(), openSession));
  if (state.sessions.length === 0) body.appendChild(el("tr", {}, el("td", { colspan: 6, class: "empty" }, "No sessions in project " + state.project + ".")));
  byId("more").hidden = !state.nextPageToken;
}

// Keeps the list row of a session current after the page learns a newer copy of it.
function noteSession(session) {
  const uid = session.metadata && session.metadata.uid;
  state.sessions = state.sessions.map((s) => (s.metadata && s.metadata.uid === uid ? session : s));
  if (uid === openUid()) state.session = session;
  renderSessions();
}

async function createSession(form) {
  const project = form.elements.project.value.trim();
  const session = { metadata: { project, name: form.elements.name.value.trim() }, harness: form.elements.harness.value.trim() };
  try {
    const created = await unary("CreateSession", { session });
    setStatus("Created " + created.metadata.uid + ".");
    byId("project").value = created.metadata.project;
    await listSessions(true);
    await openSession(created.metadata.uid);
  } catch (err) {
    showError("CreateSession", err);
  }
}

// ---- the open session

async function openSession(uid) {
  try {
    const session = await unary("GetSession", { uid });
    state.session = session;
    state.records = [];
    state.loaded = false;
    history.replaceState(null, "", "#" + uid);
    byId("empty").hidden = true;
    byId("detail").hidden = false;
    byId("verify").textContent = "";
    renderSessions();
    renderDetail();
    await loadTimeline();
  } catch (err) {
    showError("GetSession", err);
  }
}

async function refreshSession() {
  const uid = openUid();
  const session = await unary("GetSession", { uid });
  if (uid === openUid()) noteSession(session);
  renderDetail();
}

function renderDetail() {
  const s = state.session;
  const m = s.metadata || {};
  byId("title").textContent = m.name || m.uid;
  const rows = [
    ["uid", m.uid], ["project", m.project], ["harness", s.harness], ["model", s.model],
    ["last seq", s.lastSeq || "0"], ["exec state", stripPrefix(s.execState, "EXEC_")],
    ["compute state", stripPrefix(s.computeState, "COMPUTE_")], ["created", formatTime(m.createTime)],
    ["updated", formatTime(m.updateTime)], ["labels", mapText(s.labels)], ["annotations", mapText(s.annotations)],
  ];
  const meta = byId("meta");
  meta.replaceChildren();
  for (const [name, value] of rows) if (value) appendAll(meta, [el("dt", {}, name), el("dd", {}, value)]);
  if (s.parentUid) {
    const parent = el("button", { type: "button", class: "link", onclick: () => openSession(s.parentUid) }, s.parentUid);
    appendAll(meta, [el("dt", {}, "forked from"), el("dd", {}, [parent, " at seq " + (s.forkSeq || "0")])]);
  }
  renderForks();
  renderApproval(s.pendingApproval);
}

// The fork tree one level down, from the sessions the list has loaded.
function renderForks() {
  const uid = openUid();
  const children = state.sessions.filter((s) => s.parentUid === uid);
  const list = byId("forks");
  list.replaceChildren();
  for (const c of children) {
    const label = (c.metadata.name || c.metadata.uid) + " (at seq " + (c.forkSeq || "0") + ")";
    list.appendChild(el("li", {}, el("button", { type: "button", class: "link", onclick: () => openSession(c.metadata.uid) }, label)));
  }
  byId("forks-box").hidden = children.length === 0;
}

// A pending host-owned approval (exec state AWAITING): decide it, then continue the turn.
function renderApproval(ref) {
  byId("approval").hidden = !ref;
  if (!ref) return;
  byId("approval-text").textContent =
    "Tool call " + (ref.toolCallId || "?") + " of execution " + (ref.executionId || "?") + " waits for a decision (request seq " + (ref.requestSeq || "?") + ").";
}

// ---- journal timeline

async function loadTimeline() {
  const uid = openUid();
  const records = [];
  try {
    for await (const rec of serverStream("Replay", { session: uid, fromSeq: "1" })) records.push(rec);
  } catch (err) {
    showError("Replay", err);
    return false;
  }
  if (uid !== openUid()) return false;
  state.records = records;
  state.loaded = true;
  renderTimeline();
  return true;
}

function renderTimeline() {
  const body = byId("timeline").tBodies[0];
  body.replaceChildren();
  for (const rec of state.records) body.appendChild(recordRow(rec));
  byId("timeline-empty").hidden = state.records.length > 0;
}

// Appends a record the live turn committed, unless a Replay meanwhile already showed it.
function appendRecord(rec) {
  const last = state.records[state.records.length - 1];
  if (last && BigInt(rec.seq) <= BigInt(last.seq)) return;
  state.records.push(rec);
  byId("timeline").tBodies[0].appendChild(recordRow(rec));
  byId("timeline-empty").hidden = true;
}

// Re-reads the journal with Replay (what the server stores, not what streamed) and rehashes it.
async function verifyOpenSession() {
  const out = byId("verify");
  if (!globalThis.crypto || !crypto.subtle) {
    out.textContent = "Cannot verify: WebCrypto needs a secure context (https, or http on localhost).";
    out.className = "bad";
    return;
  }
  out.textContent = "Verifying…";
  out.className = "";
  try {
    await refreshSession();
  } catch (err) {
    showError("GetSession", err);
  }
  if (!(await loadTimeline())) {
    out.textContent = "";
    return;
  }
  const result = await verifyChain(state.records);
  const last = state.session.lastSeq || "0";
  if (!result.ok) {
    out.textContent = "BROKEN at seq " + result.seq + ": " + result.reason;
    out.className = "bad";
    const rows = Array.from(byId("timeline").tBodies[0].children);
    const row = rows.find((r) => r.getAttribute("data-seq") === result.seq);
    if (row) row.classList.add("bad-row");
  } else if (result.headSeq !== last) {
    out.textContent = "Chain links, but it ends at seq " + result.headSeq + " while the session's last_seq is " + last + ".";
    out.className = "bad";
  } else {
    out.textContent = "VERIFIED: " + result.count + " records, head seq " + result.headSeq + ", hash " + result.headHash.slice(0, 16) + "…";
    out.className = "good";
  }
}

// ---- turns

// Runs one turn. With text: one user input; without: an inputless Exec (approval recovery).
// expected_last_seq is the head on screen, so a turn never lands on a journal the page has not shown.
async function runTurn(text) {
  const uid = openUid();
  const req = { session: uid, inputs: text ? [{ role: "user", parts: [{ text: { text } }] }] : [] };
  if (state.loaded) req.expectedLastSeq = state.records.length ? state.records[state.records.length - 1].seq : "0";
  state.turn = { uid, executionId: "" };
  setTurnUi(true);
  try {
    for await (const update of serverStream("Exec", req)) {
      if (uid !== openUid()) continue; // keep reading so the turn completes; it belongs to a closed view
      if (update.session) {
        noteSession(update.session);
        renderDetail();
      } else if (update.record) {
        appendRecord(update.record);
        noteExecution(update.record);
      } else if (update.delta) {
        showDelta(update.delta);
      }
    }
    setStatus("Turn finished.");
  } catch (err) {
    showError("Exec", err);
  } finally {
    state.turn = null;
    setTurnUi(false);
    if (uid === openUid()) await refreshSession().catch((err) => showError("GetSession", err));
  }
}

function noteExecution(rec) {
  if (state.turn && rec.event && rec.event.executionId) state.turn.executionId = rec.event.executionId;
}

// Deltas are ephemeral (never journaled): shown while the turn runs, dropped when it ends.
function showDelta(delta) {
  byId("stream-label").textContent = delta.done ? "streamed (part done)" : "streaming…";
  byId("stream-text").textContent += delta.chunk || "";
}

function setTurnUi(running) {
  byId("run").disabled = running;
  byId("continue").disabled = running;
  byId("streaming").hidden = !running;
  if (running) {
    byId("stream-label").textContent = "streaming…";
    byId("stream-text").textContent = "";
  }
}

// ---- lifecycle buttons: each shows the server's answer, including "unimplemented"

async function callAndShow(method, body, onDone) {
  try {
    const res = await unary(method, body);
    setStatus(method + " done.");
    if (onDone) await onDone(res);
  } catch (err) {
    showError(method, err);
  }
}

async function afterSessionChange(session) {
  if (session && session.metadata) noteSession(session);
  renderDetail();
  await loadTimeline();
}

function forkSession() {
  const at = byId("fork-seq").value.trim();
  callAndShow("Fork", { session: openUid(), atSeq: at || "0", count: 1 }, async (res) => {
    const child = (res.children || [])[0];
    await listSessions(true);
    if (child) await openSession(child.metadata.uid);
  });
}

function deleteSession() {
  const uid = openUid();
  if (!confirm("Delete session " + uid + "? Its journal is erased.")) return;
  callAndShow("DeleteSession", { uid }, async () => {
    state.session = null;
    byId("detail").hidden = true;
    byId("empty").hidden = false;
    history.replaceState(null, "", "#");
    await listSessions(true);
  });
}

function decideApproval(approved) {
  const ref = state.session.pendingApproval || {};
  const body = { session: openUid(), executionId: ref.executionId, toolCallId: ref.toolCallId, requestSeq: ref.requestSeq, approved, reason: byId("approval-reason").value.trim() };
  callAndShow("Approve", body, (res) => afterSessionChange(res.session));
}

// ---- wiring

function bindControls() {
  byId("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  byId("token").addEventListener("change", (e) => {
    const token = e.target.value.trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
    listSessions(true);
  });
  byId("list-form").addEventListener("submit", (e) => (e.preventDefault(), listSessions(true)));
  byId("more").addEventListener("click", () => listSessions(false));
  byId("create-form").addEventListener("submit", (e) => (e.preventDefault(), createSession(e.target)));
  byId("exec-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = byId("exec-text").value;
    byId("exec-text").value = "";
    runTurn(text);
  });
  byId("refresh").addEventListener("click", () => openSession(openUid()));
  byId("verify-chain").addEventListener("click", verifyOpenSession);
  byId("fork").addEventListener("click", forkSession);
  byId("suspend").addEventListener("click", () => callAndShow("Suspend", { session: openUid() }, afterSessionChange));
  byId("resume").addEventListener("click", () => callAndShow("Resume", { session: openUid() }, afterSessionChange));
  byId("cancel").addEventListener("click", () => {
    const executionId = state.turn && state.turn.uid === openUid() ? state.turn.executionId : "";
    callAndShow("Cancel", { session: openUid(), executionId, reason: "USER" }, afterSessionChange);
  });
  byId("delete").addEventListener("click", deleteSession);
  byId("approve").addEventListener("click", () => decideApproval(true));
  byId("deny").addEventListener("click", () => decideApproval(false));
  byId("continue").addEventListener("click", () => runTurn(""));
}

// Opens the session named in the URL fragment (#sess-…), so a link reaches one session.
function openFromHash() {
  const uid = location.hash.slice(1);
  if (UID_PATTERN.test(uid) && uid !== openUid()) openSession(uid);
}

function boot() {
  bindControls();
  window.addEventListener("hashchange", openFromHash);
  listSessions(true);
  openFromHash();
}

boot();
`;
