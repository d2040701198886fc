/**
 * A tenant's harness registry (docs/contract.md §2.3, §4.4; docs/behaviour.md §6.4): one row per registered
 * name with its immutable spec (binary HarnessSpec), its spec_digest, the placement this host keeps
 * beside the spec (binary agentsessions.edge.v1.EdgePlacement, for tunnel and http_runtime), and
 * its state. It shares the
 * Directory's database but keeps its own table and migration list (version in `registry_version`).
 *
 * The store knows nothing of static harnesses or of what a spec means: the Worker validates the
 * spec, refuses built-in names and computes the digest (worker/registry-service.ts). Here a name is
 * bound to one digest forever; a different digest under it is a conflict, and retiring only flips
 * the state (a different placement under it is a conflict too). Expected outcomes are returned,
 * never thrown. Migration 2 moved placements stored inside old specs out of them
 * (placement-migration.ts). Tested in
 * test/node/registry/registry-store.test.ts.
 */
import { randomHex } from "../../proto/ids.js";
import { migrate, type Migrations } from "../storage/migrate.js";
import { movePlacementsOutOfSpecs } from "./placement-migration.js";
import type { SqlDb } from "../storage/sql.js";

const MIGRATIONS: Migrations = [
  [
    `CREATE TABLE harnesses (
       name TEXT PRIMARY KEY,
       uid TEXT NOT NULL UNIQUE,
       spec BLOB NOT NULL,
       spec_digest TEXT NOT NULL,
       state TEXT NOT NULL CHECK (state IN ('active', 'retired')),
       version INTEGER NOT NULL,
       create_ms INTEGER NOT NULL,
       update_ms INTEGER NOT NULL,
       retire_ms INTEGER,
       retire_reason TEXT
     )`,
  ],
  // Our placements leave the contract's HarnessSpec (docs/tunnel.md "Registering").
  ["ALTER TABLE harnesses ADD COLUMN placement BLOB", movePlacementsOutOfSpecs],
];

const COLUMNS = "name, uid, spec, spec_digest, placement, state, version, create_ms, update_ms, retire_ms, retire_reason";

const stmts = {
  get: `SELECT ${COLUMNS} FROM harnesses WHERE name = ?`,
  insert: `INSERT INTO harnesses (name, uid, spec, spec_digest, placement, state, version, create_ms, update_ms)
           VALUES (?, ?, ?, ?, ?, 'active', 1, ?, ?)`,
  reactivate: `UPDATE harnesses SET state = 'active', version = version + 1, update_ms = ?, retire_ms = NULL,
                retire_reason = NULL WHERE name = ? AND state = 'retired'`,
  retire: `UPDATE harnesses SET state = 'retired', version = version + 1, update_ms = ?, retire_ms = ?,
           retire_reason = ? WHERE name = ? AND state = 'active'`,
  page: `SELECT ${COLUMNS} FROM harnesses WHERE name > ? ORDER BY name LIMIT ?`,
  pageActive: `SELECT ${COLUMNS} FROM harnesses WHERE name > ? AND state = 'active' ORDER BY name LIMIT ?`,
} as const;

interface Row extends Record<string, string | number | null | Uint8Array> {
  name: string;
  uid: string;
  spec: Uint8Array;
  spec_digest: string;
  placement: Uint8Array | null;
  state: HarnessRowState;
  version: number;
  create_ms: number;
  update_ms: number;
  retire_ms: number | null;
  retire_reason: string | null;
}

/** Registration uid (docs/contract.md §9): `harness-` + 24 lowercase hex. */
export type HarnessUid = string & { readonly __brand: "HarnessUid" };

const HARNESS_UID_RE = /^harness-[0-9a-f]{24}$/;

export function isHarnessUid(s: string): s is HarnessUid {
  return HARNESS_UID_RE.test(s);
}

export function mintHarnessUid(): HarnessUid {
  return ("harness-" + randomHex(12)) as HarnessUid;
}

export type HarnessRowState = "active" | "retired";

/** One registered harness as stored (what the Directory's RPC methods return). */
export interface HarnessRecord {
  name: string;
  uid: HarnessUid;
  /** The binary HarnessSpec, exactly as registered (no unknown fields: the Worker refuses those). */
  spec: Uint8Array;
  /** "sha256:" + hex (docs/contract.md §7.6). */
  specDigest: string;
  /** The binary EdgePlacement kept beside the spec (tunnel, http_runtime); unset when the spec places it. */
  placement?: Uint8Array;
  state: HarnessRowState;
  /** Bumped on every state change, for ResourceMetadata.version. */
  version: number;
  createMs: number;
  updateMs: number;
  /** Set while retired: the first retire of this retirement (a repeat keeps it). */
  retireMs?: number;
  retireReason?: string;
}

/**
 * What session creation and routing need of a registered name (Directory `lookupHarness`): refuse
 * a retired one for new sessions (FAILED_PRECONDITION), pin the digest, route by the placement
 * (decode `placement` with `fromBinary(EdgePlacementSchema, placement)`, `spec` with HarnessSpecSchema).
 */
export interface HarnessLookup {
  state: HarnessRowState;
  spec: Uint8Array;
  specDigest: string;
  placement?: Uint8Array;
  uid: HarnessUid;
}

export type RegisterOutcome = "created" | "unchanged" | "reactivated";

export type RegisterResult =
  | { ok: true; outcome: RegisterOutcome; record: HarnessRecord }
  /** The name is bound to another spec; `record` is what it holds. */
  | { ok: false; reason: "spec_conflict"; record: HarnessRecord };

export type RetireResult =
  /** `changed` is false when it was already retired (the first retire's time and reason stay). */
  { ok: true; changed: boolean; record: HarnessRecord } | { ok: false; reason: "not_found" };

export class RegistryStore {
  constructor(
    private readonly _db: SqlDb,
    private readonly _now: () => number = Date.now,
  ) {
    migrate(_db, MIGRATIONS, "harness registry", "registry_version");
  }

  /**
   * Binds `name` to the spec whose digest is `specDigest` and to `placement` (the binary
   * EdgePlacement beside it, if any), or reports how it already stands.
   */
  register(name: string, spec: Uint8Array, specDigest: string, placement?: Uint8Array): RegisterResult {
    return this._db.transaction(() => {
      const existing = this.get(name);
      if (existing) {
        if (existing.specDigest !== specDigest || !sameBytes(existing.placement, placement)) return { ok: false, reason: "spec_conflict", record: existing };
        if (existing.state === "active") return { ok: true, outcome: "unchanged", record: existing };
        this._db.query(stmts.reactivate, this._now(), name);
        return { ok: true, outcome: "reactivated", record: this.get(name)! };
      }
      const now = this._now();
      this._db.query(stmts.insert, name, mintHarnessUid(), spec, specDigest, placement ?? null, now, now);
      return { ok: true, outcome: "created", record: this.get(name)! };
    });
  }

  get(name: string): HarnessRecord | undefined {
    // Registration admits DNS labels (at most 63 characters) only, so a longer name cannot match;
    // and a client-sized one (an Exec harness override) would reach SQLite as a parameter over
    // its 2 MB limit, SQLITE_TOOBIG, which surfaced as INTERNAL (test/node/fuzz).
    if (name.length > 63) return undefined;
    const row = this._db.query<Row>(stmts.get, name)[0];
    return row && recordFromRow(row);
  }

  lookup(name: string): HarnessLookup | undefined {
    const r = this.get(name);
    return r && { state: r.state, spec: r.spec, specDigest: r.specDigest, uid: r.uid, ...(r.placement && { placement: r.placement }) };
  }

  /** Up to `limit` registrations named strictly after `after` ("" = from the start), in name order. */
  list(after: string, limit: number, includeRetired: boolean): HarnessRecord[] {
    const rows = this._db.query<Row>(includeRetired ? stmts.page : stmts.pageActive, after, limit);
    return rows.map(recordFromRow);
  }

  /** Refuses new sessions on `name` from now on; idempotent. */
  retire(name: string, reason: string): RetireResult {
    return this._db.transaction(() => {
      const existing = this.get(name);
      if (!existing) return { ok: false, reason: "not_found" };
      if (existing.state === "retired") return { ok: true, changed: false, record: existing };
      const now = this._now();
      this._db.query(stmts.retire, now, now, reason, name);
      return { ok: true, changed: true, record: this.get(name)! };
    });
  }
}

function recordFromRow(r: Row): HarnessRecord {
  const out: HarnessRecord = {
    name: r.name,
    uid: r.uid as HarnessUid,
    spec: r.spec,
    specDigest: r.spec_digest,
    state: r.state,
    version: r.version,
    createMs: r.create_ms,
    updateMs: r.update_ms,
  };
  if (r.placement !== null) out.placement = r.placement;
  if (r.retire_ms !== null) {
    out.retireMs = r.retire_ms;
    out.retireReason = r.retire_reason ?? "";
  }
  return out;
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (!a?.length || !b?.length) return !a?.length && !b?.length;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
