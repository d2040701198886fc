/**
 * The inspector's view helpers, as page JS: DOM building and one-line summaries of sessions and
 * journal records. Every server string reaches the page as a Text node or an attribute value set
 * with setAttribute, never as markup, so nothing here needs an HTML escaper. Inlined by ui-page.ts.
 * Written without backticks or "${" because it lives inside a template literal.
 * @internal
 */
export const UI_VIEW_JS = String.raw`
function byId(id) {
  return document.getElementById(id);
}

// el("td", {class: "num", title: "…", onclick: f}, [child, "text", …]): strings become Text nodes.
function el(tag, props, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  appendAll(node, children);
  return node;
}

function appendAll(node, children) {
  for (const child of [].concat(children === undefined ? [] : children)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A status line for the last action: what happened, or the server's code and message.
function setStatus(text, isError) {
  const out = byId("status");
  out.textContent = text;
  out.className = isError ? "error" : "";
}

function showError(label, err) {
  const code = err && err.code ? err.code : err && err.name === "TypeError" ? "network" : "error";
  setStatus(label + " failed: " + code + ": " + (err && err.message ? err.message : String(err)), true);
}

function clip(text, max) {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

function stripPrefix(name, prefix) {
  return typeof name === "string" && name.startsWith(prefix) ? name.slice(prefix.length) : name || "";
}

function formatTime(ts) {
  const d = ts ? new Date(ts) : null;
  return d && !Number.isNaN(d.getTime()) ? d.toLocaleString() : ts || "";
}

function stateOf(session) {
  return stripPrefix(session.execState, "EXEC_") + " / " + stripPrefix(session.computeState, "COMPUTE_");
}

// ---- journal records: one line per event body (CONTRACT.md §4.1 Event oneof)

function partText(p) {
  if (p.text) return p.text.text || "";
  if (p.toolCall) return "[tool call " + (p.toolCall.tool || "?") + "]";
  if (p.toolResult) return "[tool result " + (p.toolResult.id || "?") + "]";
  if (p.file) return "[file " + (p.file.name || p.file.mime || "") + "]";
  if (p.data) return "[data]";
  if (p.reasoning) return "[reasoning]";
  return "[empty part]";
}

function messageText(m) {
  return (m.role || "?") + ": " + (m.parts || []).map(partText).join(" ");
}

function executionStartText(s) {
  const bits = [];
  if (s.harness) bits.push("harness " + s.harness + (s.harnessVersion ? " v" + s.harnessVersion : ""));
  bits.push("inputs " + (s.inputCount === undefined ? "unset" : s.inputCount));
  if (s.resumeFromSeq) bits.push("resume from " + s.resumeFromSeq);
  return bits.join(" · ");
}

function summarize(ev) {
  if (ev.message) return messageText(ev.message);
  if (ev.model) return "model " + (ev.model.model || "?") + (ev.model.id ? " · call " + ev.model.id : "");
  if (ev.tool) return "tool " + (ev.tool.tool || "?") + " · call " + (ev.tool.id || "?") + " · " + stripPrefix(ev.tool.mediation, "MEDIATION_");
  if (ev.result) {
    const r = ev.result;
    return "result of " + (r.id || "?") + (r.isError ? " · error " + (r.code || "") + " " + (r.error || "") : " · ok");
  }
  if (ev.approval) return "approval requested for " + (ev.approval.toolCallId || "?") + (ev.approval.reason ? ": " + ev.approval.reason : "");
  if (ev.approvalResult) {
    const a = ev.approvalResult;
    return (a.approved ? "approved " : "denied ") + (a.toolCallId || "?") + (a.reason ? ": " + a.reason : "");
  }
  if (ev.usage) return "usage " + (ev.usage.model || "") + " · in " + (ev.usage.inputTokens || "0") + " · out " + (ev.usage.outputTokens || "0");
  if (ev.lifecycle) return stripPrefix(ev.lifecycle.kind, "LIFECYCLE_") + (ev.lifecycle.detail ? " " + ev.lifecycle.detail : "");
  if (ev.end) return (ev.end.state || "?") + (ev.end.error ? ": " + (ev.end.error.description || "") : "");
  if (ev.error) return "code " + (ev.error.code || 0) + ": " + (ev.error.description || "");
  if (ev.executionStart) return executionStartText(ev.executionStart);
  return "";
}

// A timeline row; clicking it (or Enter) shows the whole record as JSON under it.
function recordRow(rec) {
  const ev = rec.event || {};
  const kind = stripPrefix(ev.kind, "EVENT_") || "UNSPECIFIED";
  const row = el("tr", { class: "record", tabindex: 0, "data-seq": rec.seq }, [
    el("td", { class: "num" }, rec.seq),
    el("td", { class: "kind kind-" + kind.toLowerCase() }, kind),
    el("td", { class: "mono", title: ev.executionId }, (ev.executionId || "").slice(0, 8)),
    el("td", { class: "summary" }, clip(summarize(ev), 240)),
    el("td", { class: "mono", title: rec.contentHash }, (rec.contentHash || "").slice(0, 10)),
  ]);
  const toggle = () => toggleRecordJson(row, rec);
  row.addEventListener("click", toggle);
  row.addEventListener("keydown", (e) => e.key === "Enter" && toggle());
  return row;
}

function toggleRecordJson(row, rec) {
  const next = row.nextElementSibling;
  if (next && next.classList.contains("record-json")) return next.remove();
  const pre = el("pre", {}, JSON.stringify(rec, null, 2));
  row.after(el("tr", { class: "record-json" }, el("td", { colspan: 5 }, pre)));
}

// A session row of the list.
function sessionRow(s, selected, open) {
  const m = s.metadata || {};
  const row = el("tr", { class: selected ? "session selected" : "session", tabindex: 0 }, [
    el("td", { class: "mono" }, m.uid || ""),
    el("td", {}, m.name || ""),
    el("td", {}, s.harness || ""),
    el("td", { class: "num" }, s.lastSeq || "0"),
    el("td", {}, stateOf(s)),
    el("td", { class: "time" }, formatTime(m.createTime)),
  ]);
  row.addEventListener("click", () => open(m.uid));
  row.addEventListener("keydown", (e) => e.key === "Enter" && open(m.uid));
  return row;
}

// key: value lines for a map<string,string> (labels, annotations, attributes).
function mapText(map) {
  return Object.keys(map || {}).sort().map((k) => k + "=" + map[k]).join(", ");
}
`;
