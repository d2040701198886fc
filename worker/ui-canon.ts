/**
 * The inspector's in-browser chain verifier (CONTRACT.md §7): RFC 8785 JCS over the proto3-JSON
 * event with proto field names, then SHA-256 via WebCrypto. It is plain JS in a string so the page
 * can inline it and test/node/integration/ui.test.ts can run the very same text with `new Function`.
 *
 * It defines `jcs`, `toProtoNames`, `canonicalRecord`, `contentHash`, `verifyChain` and nothing
 * else; no DOM, so it runs in Node 20 too (globalThis.crypto.subtle, TextEncoder).
 * Written without backticks or "${" because it lives inside a template literal.
 * @internal
 */
export const UI_CANON_JS = String.raw`
// Fields whose values are maps or google.protobuf.Struct: their keys are data, not proto field
// names, so snake-casing stops there (map<string,string> labels/params/attributes; Struct args,
// output, data, input_schema).
const OPAQUE_FIELDS = new Set(["labels", "annotations", "params", "attributes", "args", "output", "data", "input_schema"]);

// JSON names in this contract are exactly lowerCamelCase of the snake_case proto names.
function snakeCase(name) {
  return name.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
}

// proto3-JSON as the server sends it (lowerCamelCase) -> the same value with proto field names.
function toProtoNames(value) {
  if (Array.isArray(value)) return value.map(toProtoNames);
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const key of Object.keys(value)) {
    const name = snakeCase(key);
    out[name] = OPAQUE_FIELDS.has(name) ? value[key] : toProtoNames(value[key]);
  }
  return out;
}

// RFC 8785: keys sorted by UTF-16 code units (the default sort), no whitespace. JSON.stringify
// gives JCS's string escaping and its ES6 number form for finite numbers.
function jcs(value) {
  if (typeof value === "number" && !Number.isFinite(value)) throw new Error("JCS has no form for " + value);
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(jcs).join(",") + "]";
  const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + jcs(value[k])).join(",") + "}";
}

// The hashed string: {"event", "prev_hash", "seq" as a decimal string}; fence is not hashed.
function canonicalRecord(event, prevHash, seq) {
  return jcs({ event: toProtoNames(event || {}), prev_hash: prevHash || "", seq: String(seq) });
}

async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// content_hash of one record; event may use JSON names or proto names.
function contentHash(event, prevHash, seq) {
  return sha256Hex(canonicalRecord(event, prevHash, seq));
}

// Checks LogRecords as Replay streams them (proto3-JSON, ascending seq): contiguous seqs, each
// prev_hash links to the record before ("" at seq 1), each content_hash recomputes.
// Resolves {ok: true, count, headSeq, headHash} or {ok: false, seq, reason} for the first bad record.
async function verifyChain(records) {
  let prevHash = null;
  let nextSeq = null;
  for (const rec of records) {
    const seq = String(rec.seq || "0");
    const linked = rec.prevHash || "";
    if (nextSeq !== null && seq !== String(nextSeq)) {
      return { ok: false, seq, reason: "expected seq " + nextSeq + " next (a gap or reordering)" };
    }
    if (prevHash === null ? seq === "1" && linked !== "" : linked !== prevHash) {
      return { ok: false, seq, reason: "prev_hash does not link to the record before" };
    }
    if ((await contentHash(rec.event, linked, seq)) !== rec.contentHash) {
      return { ok: false, seq, reason: "content_hash does not match the recomputed hash" };
    }
    prevHash = rec.contentHash;
    nextSeq = BigInt(seq) + 1n;
  }
  const last = records[records.length - 1];
  return { ok: true, count: records.length, headSeq: last ? String(last.seq) : "0", headHash: prevHash || "" };
}
`;
