/**
 * The tenant's harness registry storage (objects/directory/registry-store.ts) on sql.js: outcomes
 * of register, retire idempotence, keyset listing, and living beside the session index.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { specDigest } from "../../../proto/canon.js";
import { EdgePlacementSchema } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { HarnessSpecSchema } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
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
    expect(schemaVersion(db, "registry_version")).toBe(2);
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

  it("register: a different placement under a taken name is a spec_conflict, even with the same spec digest", () => {
    const { store } = fixture();
    const tunnel = toBinary(EdgePlacementSchema, create(EdgePlacementSchema, { placement: { case: "tunnel", value: { note: "a" } } }));
    const other = toBinary(EdgePlacementSchema, create(EdgePlacementSchema, { placement: { case: "tunnel", value: { note: "b" } } }));
    expect(store.register("alpha", SPEC_A, DIGEST_A, tunnel)).toMatchObject({ ok: true, outcome: "created" });
    expect(store.register("alpha", SPEC_A, DIGEST_A, tunnel)).toMatchObject({ ok: true, outcome: "unchanged" });
    expect(store.register("alpha", SPEC_A, DIGEST_A, other)).toMatchObject({ ok: false, reason: "spec_conflict" });
    expect(store.register("alpha", SPEC_A, DIGEST_A)).toMatchObject({ ok: false, reason: "spec_conflict" });
    expect([...store.lookup("alpha")!.placement!]).toEqual([...tunnel]);
  });
});

/** The registry as migration 1 left it, with rows whose specs carry our placements inside them. */
function legacyRegistry(rows: [name: string, spec: number[]][]) {
  const db = createTestDb();
  db.query(`CREATE TABLE harnesses (
       name TEXT PRIMARY KEY, uid TEXT NOT NULL UNIQUE, spec BLOB NOT NULL, spec_digest TEXT NOT NULL,
       state TEXT NOT NULL CHECK (state IN ('active', 'retired')), version INTEGER NOT NULL,
       create_ms INTEGER NOT NULL, update_ms INTEGER NOT NULL, retire_ms INTEGER, retire_reason TEXT)`);
  db.query("CREATE TABLE registry_version (version INTEGER NOT NULL)");
  db.query("INSERT INTO registry_version (version) VALUES (1)");
  rows.forEach(([name, spec], i) => {
    db.query(
      "INSERT INTO harnesses (name, uid, spec, spec_digest, state, version, create_ms, update_ms) VALUES (?, ?, ?, ?, 'active', 1, 5, 5)",
      name,
      `harness-${String(i).padStart(24, "0")}`,
      new Uint8Array(spec),
      "sha256:" + "0".repeat(64),
    );
  });
  return db;
}

const utf8 = (s: string) => [...new TextEncoder().encode(s)];

describe("RegistryStore migration 2: our placements leave the contract's HarnessSpec", () => {
  // The old encoding: HarnessSpec{tunnel(5){note}, capabilities(3){resumability 1}, descriptor_id(4)}.
  const caps = [0x1a, 0x02, 0x08, 0x01];
  const oldTunnel = [0x2a, 0x08, 0x0a, 0x06, ...utf8("laptop"), ...caps, 0x22, 0x08, ...utf8("my-agent")];
  const url = "https://runtime.example/";
  const oldHttp = [0x32, 2 + url.length, 0x0a, url.length, ...utf8(url), ...caps];
  const newSpec = (descriptorId = "") => create(HarnessSpecSchema, { capabilities: { resumability: Resumability.STATELESS_REPLAY }, descriptorId });

  it("migration: a row written the old way loads with the placement beside a contract-only spec and that spec's digest", () => {
    const db = legacyRegistry([
      ["laptop", oldTunnel],
      ["runtime", oldHttp],
    ]);
    // The fixture really is the old wire form: the contract's schema sees fields 5 and 6 as unknown.
    expect(fromBinary(HarnessSpecSchema, new Uint8Array(oldTunnel)).$unknown?.map((u) => u.no)).toEqual([5]);
    const store = new RegistryStore(db);
    expect(schemaVersion(db, "registry_version")).toBe(2);

    const laptop = store.get("laptop")!;
    const spec = fromBinary(HarnessSpecSchema, laptop.spec);
    expect(spec.$unknown).toBeUndefined();
    expect(spec).toEqual(newSpec("my-agent"));
    expect(laptop.specDigest).toBe(specDigest(newSpec("my-agent")).digest);
    expect(fromBinary(EdgePlacementSchema, laptop.placement!).placement).toEqual({ case: "tunnel", value: expect.objectContaining({ note: "laptop" }) });
    // Everything else about the row is as it was.
    expect(laptop).toMatchObject({ uid: "harness-000000000000000000000000", state: "active", version: 1, createMs: 5 });

    const runtime = store.lookup("runtime")!;
    expect(fromBinary(EdgePlacementSchema, runtime.placement!).placement).toEqual({ case: "httpRuntime", value: expect.objectContaining({ url }) });
    expect(runtime.specDigest).toBe(specDigest(newSpec()).digest);
  });

  it("migration: registering the migrated content again the new way is UNCHANGED (the bytes are the new encoding's)", () => {
    const store = new RegistryStore(legacyRegistry([["laptop", oldTunnel]]));
    const spec = newSpec("my-agent");
    const placement = create(EdgePlacementSchema, { placement: { case: "tunnel", value: { note: "laptop" } } });
    const again = store.register("laptop", toBinary(HarnessSpecSchema, spec), specDigest(spec).digest, toBinary(EdgePlacementSchema, placement));
    expect(again).toMatchObject({ ok: true, outcome: "unchanged" });
  });

  it("migration: a spec with none of the old fields is left exactly as stored", () => {
    const remote = [0x0a, 0x06, 0x0a, 0x04, ...utf8("h:90"), ...caps];
    const db = legacyRegistry([["plain", remote]]);
    const store = new RegistryStore(db);
    const row = store.get("plain")!;
    expect([...row.spec]).toEqual(remote);
    expect(row.specDigest).toBe("sha256:" + "0".repeat(64));
    expect(row.placement).toBeUndefined();
  });
});
