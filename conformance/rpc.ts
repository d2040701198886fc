/**
 * One RPC of a conformance step over real HTTP: the generated Connect client of the service the step
 * names (services.ts; a black box: nothing of the SDK under test is used), proto3-JSON in via
 * `fromJson` and out via `toJson`. A result becomes a "view", the JSON object that assertions and
 * `save` paths read. Internal to conformance/ (@internal).
 */
import { fromJson, toJson, type DescMessage, type DescMethod, type DescService, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type CallOptions, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { EventKind, LogRecordSchema, type LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { DeltaSchema, SessionSchema, type ExecUpdate } from "../proto/gen/agentsessions/v1/session_pb.js";
import { textOf } from "../proto/messages.js";
import type { Json } from "./case.js";
import { isExec, isListSessions, resolveMethod } from "./services.js";

export interface Target {
  /** Base URL of the host, e.g. http://127.0.0.1:8787. */
  url: string;
  /** Sent as `Authorization: Bearer …`. */
  token?: string;
  /** Connect JSON on the wire instead of binary protobuf (the suite should pass both ways). */
  json?: boolean;
}

export interface CallResult {
  view: Record<string, unknown>;
  /** The stream's records as decoded messages, for byte-for-byte comparison and chain checks. */
  records: LogRecord[];
  error?: ConnectError;
}

type AnyCall = (req: Message, opts?: CallOptions) => Promise<Message> | AsyncIterable<Message>;
/** `method` is a step's `call`: `Exec` (Sessions) or `Service.Method` (services.ts). */
export type Rpc = (method: string, request: unknown) => Promise<CallResult>;

// A hung stream must fail its case, not the whole run.
const CALL_TIMEOUT_MS = 30_000;
// ListSessions `pages: true` gives up after this many pages: a token that never empties is a bug.
const MAX_PAGES = 1000;

export function createRpc(target: Target): Rpc {
  const interceptors: Interceptor[] = [];
  if (target.token) {
    const auth = `Bearer ${target.token}`;
    interceptors.push((next) => (req) => {
      req.header.set("Authorization", auth);
      return next(req);
    });
  }
  const transport = createConnectTransport({
    baseUrl: target.url.replace(/\/+$/, ""),
    useBinaryFormat: !target.json,
    interceptors,
    fetch: globalThis.fetch,
  });
  // One client per service, all over the same transport (the host serves them on one endpoint).
  const clients = new Map<DescService, Record<string, AnyCall>>();
  const clientOf = (service: DescService) => {
    let c = clients.get(service);
    if (!c) clients.set(service, (c = createClient(service, transport) as unknown as Record<string, AnyCall>));
    return c;
  };

  return async (name, request) => {
    const method = resolveMethod(name);
    const call = clientOf(method.parent)[method.localName]!;
    // Strict: an unknown field in a case's request is a typo, not something to drop silently.
    const req = fromJson(method.input, (request ?? {}) as Json);
    const opts: CallOptions = { timeoutMs: CALL_TIMEOUT_MS };
    if (method.methodKind === "unary") {
      try {
        const res = await (call(req, opts) as Promise<Message>);
        return { view: unaryView(method, res), records: [] };
      } catch (e) {
        return { view: {}, records: [], error: ConnectError.from(e) };
      }
    }
    const frames: Message[] = [];
    let error: ConnectError | undefined;
    try {
      for await (const f of call(req, opts) as AsyncIterable<Message>) frames.push(f);
    } catch (e) {
      error = ConnectError.from(e);
    }
    return { ...streamView(method, frames), error };
  };
}

/** ListSessions `pages: true`: walk every page, then one view over all of them. */
export async function callAllPages(rpc: Rpc, request: Record<string, unknown>): Promise<CallResult> {
  const sessions: unknown[] = [];
  let pageToken = typeof request.pageToken === "string" ? request.pageToken : "";
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const r = await rpc("ListSessions", { ...request, pageToken });
    if (r.error) return r;
    sessions.push(...((r.view.sessions as unknown[] | undefined) ?? []));
    pageToken = String(r.view.nextPageToken ?? "");
    if (pageToken === "") return { view: { pages, sessions, uids: uidsOf(sessions) }, records: [] };
  }
  return { view: {}, records: [], error: new ConnectError(`ListSessions still had a next page after ${MAX_PAGES} pages`, Code.Internal) };
}

function unaryView(method: DescMethod, res: Message): Record<string, unknown> {
  const view = toJson(method.output as DescMessage, res) as Record<string, unknown>;
  if (isListSessions(method)) view.uids = uidsOf((view.sessions as unknown[] | undefined) ?? []);
  return view;
}

/**
 * Exec frames are ExecUpdates, Replay frames are LogRecords; both get the same derived fields so
 * cases read them alike: `frames` (frame kinds in order), `session` (first session frame),
 * `finalSession`, `records`, `seqs`, `kinds` (EventKind names without EVENT_), `outputs` (OUTPUT
 * text) and `executionIds` (distinct, in order).
 */
function streamView(method: DescMethod, frames: Message[]): { view: Record<string, unknown>; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const sessions: unknown[] = [];
  const deltas: unknown[] = [];
  const kinds: string[] = [];
  for (const f of frames) {
    if (!isExec(method)) {
      records.push(f as LogRecord);
      kinds.push("record");
      continue;
    }
    const u = (f as ExecUpdate).update;
    kinds.push(u.case ?? "empty");
    if (u.case === "record") records.push(u.value);
    else if (u.case === "session") sessions.push(toJson(SessionSchema, u.value));
    else if (u.case === "delta") deltas.push(toJson(DeltaSchema, u.value));
  }
  const view: Record<string, unknown> = {
    frames: kinds,
    records: records.map((r) => toJson(LogRecordSchema, r)),
    seqs: records.map((r) => Number(r.seq)),
    kinds: records.map((r) => kindName(r.event?.kind ?? EventKind.EVENT_KIND_UNSPECIFIED)),
    outputs: records.filter((r) => r.event?.kind === EventKind.EVENT_OUTPUT).map((r) => textOf(eventMessage(r))),
    executionIds: [...new Set(records.map((r) => r.event?.executionId ?? "").filter((x) => x !== ""))],
    deltas,
  };
  if (sessions.length > 0) view.session = sessions[0];
  if (sessions.length > 1) view.finalSession = sessions[sessions.length - 1];
  return { view, records };
}

function kindName(k: EventKind): string {
  return (EventKind[k] ?? String(k)).replace(/^EVENT_/, "");
}

function eventMessage(r: LogRecord) {
  return r.event?.body.case === "message" ? r.event.body.value : undefined;
}

function uidsOf(sessions: unknown[]): string[] {
  return sessions.map((s) => String((s as { metadata?: { uid?: string } }).metadata?.uid ?? ""));
}
