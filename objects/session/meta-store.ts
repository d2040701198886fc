/**
 * The session's metadata row (docs/design.md §4): who it is, what it was created with, and the
 * projections the journal maintains in its append transaction (compute_state, exec_state, the
 * pending approval), plus the pending approval's deadline, which the alarm enforces.
 *
 * The static part (project, name, harness, model, labels, annotations, origin, identity, lineage)
 * is kept as the binary Session message it was created from, so nothing is lost in a column mapping.
 * Cached in memory after the first read; this object is the only writer.
 */
import { toBinary } from "@bufbuild/protobuf";
import { decodeBinary } from "../../proto/binary-reader.js";
import { ComputeState, ExecState, SessionSchema, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { SqlDb } from "../storage/sql.js";
import type { PendingGate, States } from "./projection.js";

/**
 * The most bytes a session's static part (project, name, harness, model, labels, annotations,
 * origin, identity) may take. Client-chosen and copied into every rendered Session: its metadata
 * row, its Directory row (whose project column repeats it), each Fork child (128 per fork, all in
 * one Directory RPC) and each ListSessions page (up to 500). SQLite refuses any value over 2 MB
 * (SQLITE_TOOBIG) and Durable Object RPC carries at most 32 MiB, so the bound is far below both.
 */
export const MAX_STATICS_BYTES = 32 * 1024;

/** Why `statics` cannot be stored, or undefined when it fits. */
export function staticsTooLarge(statics: Session): string | undefined {
  const n = toBinary(SessionSchema, statics).length;
  if (n <= MAX_STATICS_BYTES) return undefined;
  return `session metadata (project, name, model, labels, annotations, origin) is ${n} bytes, over the limit of ${MAX_STATICS_BYTES}: keep large data out of labels and annotations`;
}

export const META_SCHEMA = [
  `CREATE TABLE meta (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     tenant TEXT NOT NULL,
     uid TEXT NOT NULL,
     session BLOB NOT NULL,
     create_ms INTEGER NOT NULL,
     update_ms INTEGER NOT NULL,
     compute_state INTEGER NOT NULL,
     exec_state INTEGER NOT NULL
   )`,
];

/** Migration 2: the pending approval (projection) and its deadline. */
export const META_PENDING_COLUMNS = [
  "ALTER TABLE meta ADD COLUMN pending_exec TEXT",
  "ALTER TABLE meta ADD COLUMN pending_call TEXT",
  "ALTER TABLE meta ADD COLUMN pending_seq INTEGER",
  "ALTER TABLE meta ADD COLUMN pending_deadline_ms INTEGER",
];

/**
 * Migration 3: the compute state the session's own placements on a runtime backend set (WARM when
 * paused, COLD when stopped, LIVE when placed). NULL for the built-in runtime, whose compute state
 * is what the journal implies.
 */
export const META_PLACEMENT_COLUMN = ["ALTER TABLE meta ADD COLUMN placement INTEGER"];

/** The metadata table created at once, as META_SCHEMA and its two migrations leave it (objects/session/schema.ts). */
export const META_SCHEMA_FRESH = [
  `CREATE TABLE meta (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     tenant TEXT NOT NULL,
     uid TEXT NOT NULL,
     session BLOB NOT NULL,
     create_ms INTEGER NOT NULL,
     update_ms INTEGER NOT NULL,
     compute_state INTEGER NOT NULL,
     exec_state INTEGER NOT NULL,
     pending_exec TEXT,
     pending_call TEXT,
     pending_seq INTEGER,
     pending_deadline_ms INTEGER,
     placement INTEGER
   )`,
];

const stmts = {
  load: `SELECT tenant, uid, session, create_ms, update_ms, compute_state, exec_state,
                pending_exec, pending_call, pending_seq, pending_deadline_ms, placement FROM meta WHERE id = 1`,
  placement: "UPDATE meta SET placement = ? WHERE id = 1",
  insert: `INSERT INTO meta (id, tenant, uid, session, create_ms, update_ms, compute_state, exec_state)
           VALUES (1, ?, ?, ?, ?, ?, ?, ?)`,
  states: `UPDATE meta SET compute_state = ?, exec_state = ?, pending_exec = ?, pending_call = ?, pending_seq = ?,
             pending_deadline_ms = CASE WHEN ? IS NULL THEN NULL ELSE pending_deadline_ms END, update_ms = ? WHERE id = 1`,
  deadline: "UPDATE meta SET pending_deadline_ms = ? WHERE id = 1",
} as const;

type MetaRow = {
  tenant: string;
  uid: string;
  session: Uint8Array;
  create_ms: number;
  update_ms: number;
  compute_state: number;
  exec_state: number;
  pending_exec: string | null;
  pending_call: string | null;
  pending_seq: number | null;
  pending_deadline_ms: number | null;
  placement: number | null;
};

export interface SessionMeta extends States {
  tenant: string;
  uid: string;
  /** The static fields of the session as created (no cursor or states). */
  statics: Session;
  createMs: number;
  updateMs: number;
  /** Compute as the session's runtime placements left it; undefined: as the journal implies. */
  placement?: ComputeState;
}

export class MetaStore {
  private _meta: SessionMeta | undefined;

  constructor(private readonly _db: SqlDb) {}

  load(): SessionMeta | undefined {
    if (!this._meta) {
      const row = this._db.query<MetaRow>(stmts.load)[0];
      if (row) this._meta = metaFromRow(row);
    }
    return this._meta;
  }

  insert(meta: SessionMeta): void {
    this._db.query(stmts.insert, meta.tenant, meta.uid, toBinary(SessionSchema, meta.statics), meta.createMs, meta.updateMs, meta.computeState, meta.execState);
    this._meta = meta;
  }

  /** Writes the projections; call inside the append transaction, then `committed` after it. */
  setStates(s: States, updateMs: number): void {
    const p = s.pending;
    this._db.query(
      stmts.states,
      s.computeState,
      s.execState,
      p?.executionId ?? null,
      p?.toolCallId ?? null,
      p ? Number(p.requestSeq) : null,
      p ? 1 : null,
      updateMs,
    );
  }

  committed(s: States, updateMs: number): void {
    if (!this._meta) return;
    const deadline = s.pending ? (s.pending.deadlineMs ?? this._meta.pending?.deadlineMs) : undefined;
    this._meta = { ...this._meta, ...s, pending: s.pending && { ...s.pending, deadlineMs: deadline }, updateMs };
  }

  /** Records when the pending approval fails closed (the alarm's schedule). */
  setDeadline(deadlineMs: number): void {
    this._db.query(stmts.deadline, deadlineMs);
    const m = this._meta;
    if (m?.pending) this._meta = { ...m, pending: { ...m.pending, deadlineMs } };
  }

  /** Records what the session's last placement operation did to its compute. */
  setPlacement(state: ComputeState): void {
    this._db.query(stmts.placement, state);
    if (this._meta) this._meta = { ...this._meta, placement: state };
  }

  forget(): void {
    this._meta = undefined;
  }
}

function metaFromRow(row: MetaRow): SessionMeta {
  const pending: PendingGate | undefined =
    row.pending_exec !== null && row.pending_call !== null && row.pending_seq !== null
      ? {
          executionId: row.pending_exec,
          toolCallId: row.pending_call,
          requestSeq: BigInt(row.pending_seq),
          deadlineMs: row.pending_deadline_ms ?? undefined,
        }
      : undefined;
  return {
    tenant: row.tenant,
    uid: row.uid,
    statics: decodeBinary(SessionSchema, row.session),
    createMs: row.create_ms,
    updateMs: row.update_ms,
    computeState: row.compute_state as ComputeState,
    execState: row.exec_state as ExecState,
    pending,
    placement: row.placement === null ? undefined : (row.placement as ComputeState),
  };
}

export const INITIAL_STATES: States = { computeState: ComputeState.COMPUTE_NONE, execState: ExecState.EXEC_PENDING };
