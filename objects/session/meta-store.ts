/**
 * The session's metadata row (DESIGN.md §4): who it is, what it was created with, and the two
 * projections the journal maintains in its append transaction (compute_state, exec_state).
 *
 * The static part (project, name, harness, model, labels, annotations, origin, identity, lineage)
 * is kept as the binary Session message it was created from, so nothing is lost in a column mapping.
 * Cached in memory after the first read; this object is the only writer.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ComputeState, ExecState, SessionSchema, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { SqlDb } from "../storage/sql.js";

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

const stmts = {
  load: "SELECT tenant, uid, session, create_ms, update_ms, compute_state, exec_state FROM meta WHERE id = 1",
  insert: `INSERT INTO meta (id, tenant, uid, session, create_ms, update_ms, compute_state, exec_state)
           VALUES (1, ?, ?, ?, ?, ?, ?, ?)`,
  states: "UPDATE meta SET compute_state = ?, exec_state = ?, update_ms = ? WHERE id = 1",
} as const;

type MetaRow = {
  tenant: string;
  uid: string;
  session: Uint8Array;
  create_ms: number;
  update_ms: number;
  compute_state: number;
  exec_state: number;
};

export interface SessionMeta {
  tenant: string;
  uid: string;
  /** The static fields of the session as created (no cursor or states). */
  statics: Session;
  createMs: number;
  updateMs: number;
  computeState: ComputeState;
  /** The journal's view of the latest execution; the live guard refines it (session-view.ts). */
  execState: ExecState;
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
    this._db.query(
      stmts.insert,
      meta.tenant,
      meta.uid,
      toBinary(SessionSchema, meta.statics),
      meta.createMs,
      meta.updateMs,
      meta.computeState,
      meta.execState,
    );
    this._meta = meta;
  }

  /** Writes the projections; call inside the append transaction. The cache follows on commit. */
  setStates(computeState: ComputeState, execState: ExecState, updateMs: number): void {
    this._db.query(stmts.states, computeState, execState, updateMs);
  }

  /** Updates the cached row after `setStates` committed. */
  committed(computeState: ComputeState, execState: ExecState, updateMs: number): void {
    if (this._meta) this._meta = { ...this._meta, computeState, execState, updateMs };
  }

  forget(): void {
    this._meta = undefined;
  }
}

function metaFromRow(row: MetaRow): SessionMeta {
  return {
    tenant: row.tenant,
    uid: row.uid,
    statics: fromBinary(SessionSchema, row.session),
    createMs: row.create_ms,
    updateMs: row.update_ms,
    computeState: row.compute_state as ComputeState,
    execState: row.exec_state as ExecState,
  };
}

export const INITIAL_STATES = { computeState: ComputeState.COMPUTE_NONE, execState: ExecState.EXEC_PENDING };
