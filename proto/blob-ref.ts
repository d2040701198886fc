/**
 * Large parts out of the row (docs/blobs.md): the reference shapes, and the two pure walks over an
 * event that every side shares: `externalizeEvent` (the host, before a record commits: each part
 * over the threshold becomes a reference, its bytes handed back to be stored) and `resolveEvent`
 * (the host before history reaches a harness, the SDK, CLI and inspector for a reader: each
 * reference becomes the part again, its bytes checked against the digest).
 *
 * Where the contract has a reference field it is used: FilePart.uri + digest (for FilePart.bytes),
 * ReasoningPart.opaque_uri + opaque_digest (for opaque_bytes), ToolResult.output_uri +
 * output_digest (for output). A text part and ToolCall.args have none, so they carry an
 * agentsessions.edge.v1.BlobRef in the contract's structured shapes: a DataPart whose one key is
 * BLOB_REF_KEY in place of the TextPart, and a Struct of that one key in place of the args.
 *
 * No hashing and no I/O here: callers pass the digest function and the fetch, so workerd (sync
 * node:crypto), Node and the browser (WebCrypto) all use the same walk. Tested in
 * test/node/proto/blob-ref.test.ts.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { Event, FilePart, Message, Part, ReasoningPart, ToolCall, ToolResult } from "./gen/agentsessions/v1/common_pb.js";

/** `agentsessions-blob:sha256/<hex>?bytes=<n>`: the object key is the path, `sha256/<hex>`. */
export const BLOB_URI_PREFIX = "agentsessions-blob:sha256/";
/** The one key of the DataPart / Struct that stands in for a text part or a tool call's args. */
export const BLOB_REF_KEY = "agentsessions.edge.v1.BlobRef";
export const DEFAULT_BLOB_INLINE_MAX_BYTES = 65_536;

export type Sha256Hex = string & { readonly __brand: "Sha256Hex" };

const HEX_RE = /^[0-9a-f]{64}$/;

/** The hex digest from `hex` or `sha256:hex`; undefined when it is neither. */
export function parseSha256(s: string): Sha256Hex | undefined {
  const hex = s.startsWith("sha256:") ? s.slice(7) : s;
  return HEX_RE.test(hex) ? (hex as Sha256Hex) : undefined;
}

/** Where one blob is and how long it is: what a reference names. */
export interface BlobLocator {
  sha256: Sha256Hex;
  bytes: number;
}

/** A blob this walk took out of an event: to be stored before the event commits. */
export interface ExtractedBlob extends BlobLocator {
  data: Uint8Array;
  mime: string;
}

export function blobUri(b: BlobLocator): string {
  return `${BLOB_URI_PREFIX}${b.sha256}?bytes=${b.bytes}`;
}

export function blobDigest(sha: Sha256Hex): string {
  return `sha256:${sha}`;
}

/** The blob a URI of ours names; undefined for any other URI (a harness's own links stay theirs). */
export function parseBlobUri(uri: string): BlobLocator | undefined {
  if (!uri.startsWith(BLOB_URI_PREFIX)) return undefined;
  const m = /^([0-9a-f]{64})\?bytes=(0|[1-9][0-9]{0,15})$/.exec(uri.slice(BLOB_URI_PREFIX.length));
  return m ? { sha256: m[1] as Sha256Hex, bytes: Number(m[2]) } : undefined;
}

/** The object key of a blob, under its tenant: tenants never share (or learn of) each other's blobs. */
export function blobKey(tenant: string, sha: Sha256Hex): string {
  return `tenants/${tenant}/sha256/${sha}`;
}

/** A reference a reader meets: where it is in the event, and what it names. */
export interface BlobReference extends BlobLocator {
  /** "text", "file", "reasoning", "tool_call.args" or "tool_result.output". */
  site: string;
  uri: string;
  digest: string;
  mime: string;
}

const TEXT_MIME = "text/plain; charset=utf-8";
const JSON_MIME = "application/json";
const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The BlobRef an extension shape carries, when `obj` is exactly one. */
function refFromStruct(obj: JsonObject | undefined): BlobReference | undefined {
  if (!obj) return undefined;
  const keys = Object.keys(obj);
  if (keys.length !== 1 || keys[0] !== BLOB_REF_KEY) return undefined;
  const r = obj[BLOB_REF_KEY];
  if (!r || typeof r !== "object" || Array.isArray(r)) return undefined;
  const { part, uri, digest, mime } = r as Record<string, unknown>;
  if (typeof uri !== "string" || typeof digest !== "string") return undefined;
  const loc = parseBlobUri(uri);
  if (!loc) return undefined;
  return { ...loc, site: typeof part === "string" ? part : "", uri, digest, mime: typeof mime === "string" ? mime : "" };
}

function structFromRef(site: string, b: ExtractedBlob): JsonObject {
  // proto3 JSON of agentsessions.edge.v1.BlobRef: int64 as a decimal string.
  return { [BLOB_REF_KEY]: { part: site, uri: blobUri(b), digest: blobDigest(b.sha256), bytes: String(b.bytes), mime: b.mime } };
}

// ---------------------------------------------------------------------------------------------
// Finding references.

/** Every reference of ours in `event`, in walk order (a digest may appear more than once). */
export function blobRefsOf(event: Event): BlobReference[] {
  const out: BlobReference[] = [];
  const b = event.body;
  if (b.case === "message") partsRefs(b.value.parts, out);
  else if (b.case === "tool") callRefs(b.value, out);
  else if (b.case === "result") resultRefs(b.value, out);
  return out;
}

function partsRefs(parts: readonly Part[], out: BlobReference[]): void {
  for (const p of parts) {
    const v = p.part;
    switch (v.case) {
      case "data": {
        const r = refFromStruct(v.value.data);
        if (r) out.push(r);
        break;
      }
      case "file": {
        const r = v.value.source.case === "uri" ? uriRef("file", v.value.source.value, v.value.digest, v.value.mime) : undefined;
        if (r) out.push(r);
        break;
      }
      case "reasoning": {
        const o = v.value.opaque;
        const r = o.case === "opaqueUri" ? uriRef("reasoning", o.value, v.value.opaqueDigest, "application/octet-stream") : undefined;
        if (r) out.push(r);
        partsRefs(v.value.summary, out);
        break;
      }
      case "toolCall":
        callRefs(v.value, out);
        break;
      case "toolResult":
        resultRefs(v.value, out);
        break;
    }
  }
}

function callRefs(c: ToolCall, out: BlobReference[]): void {
  const r = refFromStruct(c.args);
  if (r) out.push(r);
}

function resultRefs(r: ToolResult, out: BlobReference[]): void {
  const ref = uriRef("tool_result.output", r.outputUri, r.outputDigest, JSON_MIME);
  if (ref) out.push(ref);
  partsRefs(r.content, out);
}

function uriRef(site: string, uri: string, digest: string, mime: string): BlobReference | undefined {
  const loc = parseBlobUri(uri);
  return loc && { ...loc, site, uri, digest, mime };
}

/**
 * Whether an event's stored bytes may hold a reference: its URI prefix appears in them. A cheap
 * test before decoding (fork seeds, the session's reference index); false means none.
 */
export function mayHoldBlobRefs(stored: Uint8Array): boolean {
  return indexOfBytes(stored, PREFIX_BYTES) >= 0;
}

const PREFIX_BYTES = utf8.encode(BLOB_URI_PREFIX);

function indexOfBytes(hay: Uint8Array, needle: Uint8Array): number {
  const first = needle[0]!;
  const last = hay.length - needle.length;
  for (let i = hay.indexOf(first); i >= 0 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Externalizing (the host, before a record commits).

export type ExternalizeResult =
  /** Nothing over the threshold: the event is unchanged (the same object). */
  | { ok: true; event: Event; blobs: [] }
  | { ok: true; event: Event; blobs: ExtractedBlob[] }
  /** The event already names a blob of ours: only the host writes references. */
  | { ok: false; detail: string };

/**
 * The event with every part over `maxInline` bytes replaced by a reference, and the bytes those
 * references name. The input event is never changed (the harness may hold its parts); only the
 * path to a replaced part is copied, so a 50 MB text is not copied here beyond its UTF-8 bytes.
 */
export function externalizeEvent(event: Event, maxInline: number, sha256: (data: Uint8Array) => string): ExternalizeResult {
  if (blobRefsOf(event).length > 0) {
    return { ok: false, detail: `the event names a blob (${BLOB_URI_PREFIX}…): only this host writes those references; send the content itself` };
  }
  const w = new Walker(maxInline, sha256);
  const b = event.body;
  let body: Event["body"] = b;
  if (b.case === "message") {
    const m = w.message(b.value);
    if (m !== b.value) body = { case: "message", value: m };
  } else if (b.case === "tool") {
    const c = w.call(b.value);
    if (c !== b.value) body = { case: "tool", value: c };
  } else if (b.case === "result") {
    const r = w.result(b.value);
    if (r !== b.value) body = { case: "result", value: r };
  }
  if (w.blobs.length === 0) return { ok: true, event, blobs: [] };
  return { ok: true, event: { ...event, body }, blobs: w.blobs };
}

class Walker {
  readonly blobs: ExtractedBlob[] = [];
  constructor(
    private readonly _max: number,
    private readonly _sha: (data: Uint8Array) => string,
  ) {}

  message(m: Message): Message {
    const parts = this.parts(m.parts);
    return parts === m.parts ? m : { ...m, parts };
  }

  parts(parts: Part[]): Part[] {
    let out: Part[] | undefined;
    for (let i = 0; i < parts.length; i++) {
      const p = this.part(parts[i]!);
      if (p !== parts[i]) (out ??= parts.slice())[i] = p;
    }
    return out ?? parts;
  }

  part(p: Part): Part {
    const v = p.part;
    switch (v.case) {
      case "text": {
        const s = v.value.text;
        // UTF-8 is at most 3 bytes per UTF-16 unit: most texts are decided without encoding.
        if (s.length * 3 <= this._max) return p;
        const data = utf8.encode(s);
        if (data.length <= this._max) return p;
        const blob = this._take(data, TEXT_MIME);
        return { ...p, part: { case: "data", value: { $typeName: "agentsessions.v1.DataPart", data: structFromRef("text", blob) } } };
      }
      case "file": {
        const f = v.value;
        // A digest beside inline bytes would be lost when the reference took its place: left inline.
        if (f.source.case !== "bytes" || f.source.value.length <= this._max || f.digest !== "") return p;
        const blob = this._take(f.source.value, f.mime || "application/octet-stream");
        const file: FilePart = { ...f, source: { case: "uri", value: blobUri(blob) }, digest: blobDigest(blob.sha256) };
        return { ...p, part: { case: "file", value: file } };
      }
      case "reasoning": {
        const r = v.value;
        let next: ReasoningPart = r;
        if (r.opaque.case === "opaqueBytes" && r.opaque.value.length > this._max && r.opaqueDigest === "") {
          const blob = this._take(r.opaque.value, "application/octet-stream");
          next = { ...r, opaque: { case: "opaqueUri", value: blobUri(blob) }, opaqueDigest: blobDigest(blob.sha256) };
        }
        const summary = this.parts(r.summary);
        if (summary !== r.summary) next = { ...next, summary };
        return next === r ? p : { ...p, part: { case: "reasoning", value: next } };
      }
      case "toolCall": {
        const c = this.call(v.value);
        return c === v.value ? p : { ...p, part: { case: "toolCall", value: c } };
      }
      case "toolResult": {
        const r = this.result(v.value);
        return r === v.value ? p : { ...p, part: { case: "toolResult", value: r } };
      }
      default:
        return p;
    }
  }

  call(c: ToolCall): ToolCall {
    const data = this._json(c.args);
    if (!data) return c;
    return { ...c, args: structFromRef("tool_call.args", this._take(data, JSON_MIME)) };
  }

  result(r: ToolResult): ToolResult {
    let next = r;
    // An executor's own output_uri keeps its output inline: the field holds one reference.
    const data = r.outputUri === "" ? this._json(r.output) : undefined;
    if (data) {
      const blob = this._take(data, JSON_MIME);
      next = { ...r, output: undefined, outputUri: blobUri(blob), outputDigest: blobDigest(blob.sha256) };
    }
    const content = this.parts(r.content);
    return content === r.content ? next : { ...next, content };
  }

  /** The JSON of a Struct when it is over the threshold, else undefined. */
  private _json(obj: JsonObject | undefined): Uint8Array | undefined {
    if (!obj || jsonUpperBound(obj, this._max) <= this._max) return undefined;
    const data = utf8.encode(JSON.stringify(obj));
    return data.length > this._max ? data : undefined;
  }

  private _take(data: Uint8Array, mime: string): ExtractedBlob {
    const sha = parseSha256(this._sha(data));
    if (!sha) throw new Error("the digest function did not return a SHA-256 hex digest");
    const blob = { sha256: sha, bytes: data.length, data, mime };
    this.blobs.push(blob);
    return blob;
  }
}

/**
 * An upper bound of the UTF-8 length of JSON.stringify(v), walking no further than needed to pass
 * `stop`: 6 bytes per string unit (the longest escape), 25 per number, and the punctuation.
 */
function jsonUpperBound(v: unknown, stop: number, acc = 0): number {
  if (acc > stop) return acc;
  if (typeof v === "string") return acc + 6 * v.length + 2;
  if (typeof v === "number") return acc + 25;
  if (v === null || typeof v === "boolean") return acc + 5;
  if (Array.isArray(v)) {
    acc += 2;
    for (const x of v) {
      acc = jsonUpperBound(x, stop, acc + 1);
      if (acc > stop) return acc;
    }
    return acc;
  }
  if (typeof v === "object") {
    acc += 2;
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      acc = jsonUpperBound(x, stop, acc + 6 * k.length + 4);
      if (acc > stop) return acc;
    }
    return acc;
  }
  return acc;
}

// ---------------------------------------------------------------------------------------------
// Resolving (a harness's history, a reader's records).

/** Reads a blob's bytes; the resolver checks them against the reference. */
export type BlobFetch = (ref: BlobReference) => Promise<Uint8Array>;

/** A blob that is missing, or whose bytes do not match the reference that names it. */
export class BlobMismatchError extends Error {
  constructor(
    readonly ref: BlobReference,
    detail: string,
  ) {
    super(`blob sha256:${ref.sha256} (${ref.site}) ${detail}`);
    this.name = "BlobMismatchError";
  }
}

/**
 * The event with every reference of ours replaced by the part it stands for. Each blob's length
 * and SHA-256 are checked (a mismatch throws BlobMismatchError); events without references come
 * back unchanged (the same object).
 */
export async function resolveEvent(event: Event, fetch: BlobFetch, sha256: (data: Uint8Array) => Promise<string> | string): Promise<Event> {
  if (blobRefsOf(event).length === 0) return event;
  const read = async (ref: BlobReference): Promise<Uint8Array> => {
    const data = await fetch(ref);
    if (data.length !== ref.bytes) throw new BlobMismatchError(ref, `is ${data.length} bytes, its reference says ${ref.bytes}`);
    if ((await sha256(data)) !== ref.sha256) throw new BlobMismatchError(ref, "does not match its digest (tampered or corrupt)");
    if (ref.digest !== blobDigest(ref.sha256)) throw new BlobMismatchError(ref, `has a digest field (${ref.digest}) that disagrees with its URI`);
    return data;
  };
  const r = new Resolver(read);
  const b = event.body;
  let body: Event["body"] = b;
  if (b.case === "message") body = { case: "message", value: { ...b.value, parts: await r.parts(b.value.parts) } };
  else if (b.case === "tool") body = { case: "tool", value: await r.call(b.value) };
  else if (b.case === "result") body = { case: "result", value: await r.result(b.value) };
  return { ...event, body };
}

class Resolver {
  constructor(private readonly _read: (ref: BlobReference) => Promise<Uint8Array>) {}

  async parts(parts: Part[]): Promise<Part[]> {
    const out: Part[] = [];
    for (const p of parts) out.push(await this.part(p));
    return out;
  }

  async part(p: Part): Promise<Part> {
    const v = p.part;
    switch (v.case) {
      case "data": {
        const ref = refFromStruct(v.value.data);
        if (!ref) return p;
        const text = decodeText(await this._read(ref), ref);
        return { ...p, part: { case: "text", value: { $typeName: "agentsessions.v1.TextPart", text } } };
      }
      case "file": {
        const f = v.value;
        const ref = f.source.case === "uri" ? uriRef("file", f.source.value, f.digest, f.mime) : undefined;
        if (!ref) return p;
        return { ...p, part: { case: "file", value: { ...f, source: { case: "bytes", value: await this._read(ref) }, digest: "" } } };
      }
      case "reasoning": {
        const r = v.value;
        const ref = r.opaque.case === "opaqueUri" ? uriRef("reasoning", r.opaque.value, r.opaqueDigest, "") : undefined;
        const opaque: ReasoningPart["opaque"] = ref ? { case: "opaqueBytes", value: await this._read(ref) } : r.opaque;
        const next: ReasoningPart = { ...r, opaque, opaqueDigest: ref ? "" : r.opaqueDigest, summary: await this.parts(r.summary) };
        return { ...p, part: { case: "reasoning", value: next } };
      }
      case "toolCall":
        return { ...p, part: { case: "toolCall", value: await this.call(v.value) } };
      case "toolResult":
        return { ...p, part: { case: "toolResult", value: await this.result(v.value) } };
      default:
        return p;
    }
  }

  async call(c: ToolCall): Promise<ToolCall> {
    const ref = refFromStruct(c.args);
    return ref ? { ...c, args: decodeJsonObject(await this._read(ref), ref) } : c;
  }

  async result(r: ToolResult): Promise<ToolResult> {
    const ref = uriRef("tool_result.output", r.outputUri, r.outputDigest, JSON_MIME);
    const next: ToolResult = ref ? { ...r, output: decodeJsonObject(await this._read(ref), ref), outputUri: "", outputDigest: "" } : r;
    return { ...next, content: await this.parts(r.content) };
  }
}

function decodeText(data: Uint8Array, ref: BlobReference): string {
  try {
    return utf8Strict.decode(data);
  } catch {
    throw new BlobMismatchError(ref, "is not UTF-8 text");
  }
}

function decodeJsonObject(data: Uint8Array, ref: BlobReference): JsonObject {
  let v: unknown;
  try {
    v = JSON.parse(decodeText(data, ref));
  } catch (e) {
    if (e instanceof BlobMismatchError) throw e;
    throw new BlobMismatchError(ref, "is not JSON");
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new BlobMismatchError(ref, "is not a JSON object");
  return v as JsonObject;
}
