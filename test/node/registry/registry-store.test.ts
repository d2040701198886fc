/**
 * The tenant's harness registry storage (objects/directory/registry-store.ts) on sql.js: outcomes
 * of register, retire idempotence, keyset listing, and living beside the session index.
 */
import { describe, expect, it } from "vitest";
import { DirectoryStore } from "../../../objects/directory/directory-store.js";
import { isHarnessUid, RegistryStore } from "../../../objects/directory/registry-store.js";
import { schemaVersion } from "../../../objects/storage/migrate.js";
import { createTestDb } from "../support/sqljs-db.js";

const SPEC_A = new Uint8Array([1, 2, 3]);
const SPEC_B = new Uint8Array([4, 5, 6]);
const DIGEST_A = "sha256:" + "a".repeat(64);
const DIGEST_B = "sha256:" + "b".repeat(64);

function fixture() {
  let now = 1_000;
  const db = createTestDb();
  const store = new RegistryStore(db, () => now);
  return { db, store, advance: (ms: number) => (now += ms), now: () => now };
}

describe("RegistryStore", () => {
  it("register: a free name is CREATED, ACTIVE, with a harness- uid and the spec bytes and digest", () => {
    const { store } = fixture();
    const r = store.register("alpha", SPEC_A, DIGEST_A);
    expect(r.ok && r.outcome).toBe("created");
    if (!r.ok) throw new Error();
    expect(isHarnessUid(r.record.uid)).toBe(true);
    expect(r.record).toMatchObject({ name: "alpha", specDigest: DIGEST_A, state: "active", version: 1, createMs: 1_000, updateMs: 1_000 });
    expect([...r.record.spec]).toEqual([...SPEC_A]);
    expect(r.record.retireMs).toBeUndefined();
    expect(store.get("alpha")).toEqual(r.record);
  });

  it("register: the same digest again is UNCHANGED and keeps uid, times and version", () => {
    const { store, advance } = fixture();
    const first = store.register("alpha", SPEC_A, DIGEST_A);
    advance(50);
    const again = store.register("alpha", SPEC_A, DIGEST_A);
    expect(again.ok && again.outcome).toBe("unchanged");
    expect(again.record).toEqual(first.record);
  });

  it("register: a different digest under a taken name is a spec_conflict naming the stored one", () => {
    const { store } = fixture();
    store.register("alpha", SPEC_A, DIGEST_A);
    const r = store.register("alpha", SPEC_B, DIGEST_B);
    expect(r).toMatchObject({ ok: false, reason: "spec_conflict", record: { specDigest: DIGEST_A } });
    expect(store.get("alpha")!.specDigest).toBe(DIGEST_A);
  });

  it("retire: flips to retired with time and reason; again is unchanged and keeps the first ones", () => {
    const { store, advance } = fixture();
    store.register("alpha", SPEC_A, DIGEST_A);
    advance(10);
    const r = store.retire("alpha", "first");
    expect(r).toMatchObject({ ok: true, changed: true, record: { state: "retired", retireMs: 1_010, retireReason: "first", version: 2, updateMs: 1_010 } });
    advance(10);
    const again = store.retire("alpha", "second");
    expect(again).toMatchObject({ ok: true, changed: false, record: { state: "retired", retireMs: 1_010, retireReason: "first", version: 2 } });
  });

  it("retire: an unknown name is not_found", () => {
    expect(fixture().store.retire("ghost", "")).toEqual({ ok: false, reason: "not_found" });
  });

  it("register: the same digest on a retired name is REACTIVATED, clearing the retirement; a different one still conflicts", () => {
    const { store, advance } = fixture();
    const created = store.register("alpha", SPEC_A, DIGEST_A);
    store.retire("alpha", "gone");
    expect(store.register("alpha", SPEC_B, DIGEST_B)).toMatchObject({ ok: false, reason: "spec_conflict" });
    advance(5);
    const r = store.register("alpha", SPEC_A, DIGEST_A);
    expect(r.ok && r.outcome).toBe("reactivated");
    expect(r.record).toMatchObject({ state: "active", uid: created.record.uid, createMs: 1_000, updateMs: 1_005, version: 3 });
    expect(r.record.retireMs).toBeUndefined();
    expect(r.record.retireReason).toBeUndefined();
  });

  it("list: name order, strictly after the cursor, limited, retired only when asked", () => {
    const { store } = fixture();
    for (const n of ["delta", "alpha", "charlie", "bravo", "echo-2"]) store.register(n, SPEC_A, DIGEST_A);
    store.retire("charlie", "");
    const names = (after: string, limit: number, retired: boolean) => store.list(after, limit, retired).map((r) => r.name);
    expect(names("", 10, true)).toEqual(["alpha", "bravo", "charlie", "delta", "echo-2"]);
    expect(names("", 10, false)).toEqual(["alpha", "bravo", "delta", "echo-2"]);
    expect(names("bravo", 2, true)).toEqual(["charlie", "delta"]);
    expect(names("bravo", 2, false)).toEqual(["delta", "echo-2"]);
    expect(names("echo-2", 10, true)).toEqual([]);
  });

  it("lookup: state, spec bytes, digest and uid of a registered name; undefined otherwise", () => {
    const { store } = fixture();
    const r = store.register("alpha", SPEC_A, DIGEST_A);
    expect(store.lookup("alpha")).toEqual({ state: "active", spec: SPEC_A, specDigest: DIGEST_A, uid: r.record.uid });
    store.retire("alpha", "");
    expect(store.lookup("alpha")!.state).toBe("retired");
    expect(store.lookup("beta")).toBeUndefined();
  });

  it("migrations: shares a database with the session index, each with its own version", () => {
    const db = createTestDb();
    new DirectoryStore(db);
    const before = schemaVersion(db);
    const store = new RegistryStore(db);
    expect(schemaVersion(db)).toBe(before);
    expect(schemaVersion(db, "registry_version")).toBe(1);
    store.register("alpha", SPEC_A, DIGEST_A);
    // Opening again (a Durable Object wake) migrates nothing and keeps the rows.
    new DirectoryStore(db);
    expect(new RegistryStore(db).get("alpha")!.specDigest).toBe(DIGEST_A);
  });

  it("migrations: refuses a registry stamped newer than this build", () => {
    const db = createTestDb();
    new RegistryStore(db);
    db.query("UPDATE registry_version SET version = 99");
    expect(() => new RegistryStore(db)).toThrow(/newer than this build/);
  });
});
