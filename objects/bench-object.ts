/**
 * BenchObject: a Durable Object used only by `npm run bench` (routes exist only when the BENCH var
 * is "1"). It runs the journal's append path and a plain SQLite insert of the same bytes on the
 * same storage, so their costs can be compared side by side in one run.
 */
import { DurableObject } from "cloudflare:workers";
import { create } from "@bufbuild/protobuf";
import { EventSchema, type Event } from "../proto/gen/agentsessions/v1/common_pb.js";
import { eventToStoredBytes } from "../proto/canon.js";
import { normalizeEvent } from "../proto/normalize.js";
import { userText } from "../proto/messages.js";
import { ComputeState, ExecState } from "../proto/gen/agentsessions/v1/session_pb.js";
import type { Env } from "./env.js";
import { Journal, JOURNAL_SCHEMA } from "./journal/journal.js";
import { projectRecords, type States } from "./session/projection.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";
import type { SqlDb } from "./storage/sql.js";
import { configureLogLevel } from "./log-line.js";

const PLAIN_SCHEMA = "CREATE TABLE IF NOT EXISTS plain (seq INTEGER PRIMARY KEY, prev_hash TEXT, hash TEXT, fence INTEGER, event BLOB)";

export class BenchObject extends DurableObject<Env> {
  private readonly _db: SqlDb;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    configureLogLevel(env);
    this._db = sqlDbFromStorage(ctx.storage);
    const exists = this._db.query("SELECT name FROM sqlite_master WHERE name = 'events'").length > 0;
    if (!exists) for (const s of JOURNAL_SCHEMA) this._db.query(s);
    this._db.query(PLAIN_SCHEMA);
  }

  /** n hash-chained appends, one event per append (each its own transaction), as a turn makes them. */
  append(n: number, textBytes: number): number {
    const journal = new Journal(this._db);
    const ev = sampleEvent(textBytes);
    let states: States = { computeState: ComputeState.COMPUTE_LIVE, execState: ExecState.EXEC_RUNNING };
    for (let i = 0; i < n; i++) {
      const r = journal.append([ev], {
        fence: 0n,
        project: (recs) =>
          (states = projectRecords(
            states,
            recs.map((x) => ({ seq: x.seq, event: x.decoded })),
          )),
      });
      if (!r.ok) throw new Error(r.reason);
    }
    return Number(journal.head().seq);
  }

  /** n plain inserts of the same stored bytes, each in its own transaction. */
  plain(n: number, textBytes: number): number {
    const bytes = eventToStoredBytes(normalizeEvent(sampleEvent(textBytes)));
    const row = this._db.query<{ seq: number | null }>("SELECT max(seq) AS seq FROM plain")[0];
    let seq = Number(row?.seq ?? 0);
    const hash = "0".repeat(64);
    for (let i = 0; i < n; i++) {
      seq++;
      this._db.transaction(() => this._db.query("INSERT INTO plain (seq, prev_hash, hash, fence, event) VALUES (?, ?, ?, ?, ?)", seq, hash, hash, 0, bytes));
    }
    return seq;
  }

  /** The bare baseline of an echo turn: five rows appended in one call. */
  five(): number {
    return this.plain(5, 40);
  }

  /**
   * The floor of a turn whose model streams its answer: three rows committed before the provider is
   * asked (as a turn commits its start, input and model call first), the provider's stream relayed
   * to the caller as its bytes arrive, and two rows once it ended (the answer and the end).
   */
  async relay(url: string, request: string): Promise<ReadableStream<Uint8Array>> {
    this.plain(3, 40);
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" }, body: request });
    if (!res.ok || !res.body) throw new Error(`bench relay: the provider answered ${res.status}`);
    const reader = res.body.getReader();
    return new ReadableStream<Uint8Array>({
      pull: async (ctl) => {
        const r = await reader.read();
        if (!r.done) return ctl.enqueue(r.value);
        this.plain(2, 40);
        ctl.close();
      },
      cancel: (reason) => reader.cancel(reason),
    });
  }

  /** A call that does nothing: what a call into an object costs by itself. */
  noop(): number {
    return 0;
  }

  /** A call that reads nothing and writes nothing, answering `size` bytes: the floor of a GetSession. */
  answering(size: number): { ok: true; value: Uint8Array } {
    return { ok: true, value: new Uint8Array(size).fill(7) };
  }

  /** The five-row call answering with `size` bytes, the way a session object answers a turn whole. */
  fiveAnswering(size: number): { ok: true; whole: Uint8Array } {
    this.plain(5, 40);
    return { ok: true, whole: new Uint8Array(size).fill(7) };
  }

  /**
   * Writes `n` structured log lines of about `size` bytes, as the host writes an info line
   * (objects/log-line.ts: `console.info`), whatever LOG_LEVEL says.
   */
  logs(n: number, size: number): number {
    const line = JSON.stringify({ level: "info", msg: "bench", detail: "x".repeat(size) });
    for (let i = 0; i < n; i++) console.info(line);
    return n;
  }

  /** The five-row baseline, answered as a byte stream over the call (what Exec returns). */
  fiveStream(): ReadableStream<Uint8Array> {
    const head = this.five();
    return new ReadableStream({
      start(ctl) {
        ctl.enqueue(new TextEncoder().encode(JSON.stringify({ head })));
        ctl.close();
      },
    });
  }

  /** The same bytes as `read`, streamed in chunks of 512 rows, as Replay streams its records. */
  readStream(n: number, size: number): ReadableStream<Uint8Array> {
    const all = this.read(n, size);
    let at = 0;
    const step = 512 * size;
    return new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (at >= all.length) return ctl.close();
        ctl.enqueue(all.slice(at, at + step));
        at += step;
      },
    });
  }

  /**
   * The floor of Replay: makes sure this object holds `n` rows of `size` bytes (written on first
   * use), then reads all of them and returns their bytes, concatenated.
   */
  read(n: number, size: number): Uint8Array {
    this._db.query("CREATE TABLE IF NOT EXISTS readrows (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    const have = Number(this._db.query<{ n: number }>("SELECT count(*) AS n FROM readrows")[0]!.n);
    if (have < n) {
      const body = new Uint8Array(size).fill(120);
      this._db.transaction(() => {
        for (let i = have + 1; i <= n; i++) this._db.query("INSERT INTO readrows (seq, body) VALUES (?, ?)", i, body);
      });
    }
    const rows = this._db.query<{ body: Uint8Array }>("SELECT body FROM readrows WHERE seq <= ? ORDER BY seq", n);
    let total = 0;
    for (const r of rows) total += r.body.length;
    const out = new Uint8Array(total);
    let at = 0;
    for (const r of rows) {
      out.set(r.body, at);
      at += r.body.length;
    }
    return out;
  }

  /** The floor of a fork's copy: `n` rows of `size` bytes inserted in one transaction (then removed). */
  insertFloor(n: number, size: number): number {
    // Called on a new object each time, as a fork child's journal is new.
    this._db.query("CREATE TABLE IF NOT EXISTS floorrows (seq INTEGER PRIMARY KEY, prev_hash TEXT, hash TEXT, fence INTEGER, event BLOB)");
    const body = new Uint8Array(size).fill(120);
    const hash = "0".repeat(64);
    this._db.transaction(() => {
      for (let i = 1; i <= n; i++) this._db.query("INSERT INTO floorrows (seq, prev_hash, hash, fence, event) VALUES (?, ?, ?, ?, ?)", i, hash, hash, 1, body);
    });
    return n;
  }
}

function sampleEvent(textBytes: number): Event {
  return create(EventSchema, {
    executionId: "0123456789abcdef",
    kind: 3,
    body: { case: "message", value: userText("x".repeat(textBytes)) },
  });
}
