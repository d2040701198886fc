/**
 * The tenant's session index: keyset paging (docs/behaviour.md §4.3), project filtering, ordering.
 */
import { describe, expect, it } from "vitest";
import { DirectoryStore, pageTokenFor, parsePageToken, type DirectoryRow } from "../../../objects/directory/directory-store.js";
import { createTestDb } from "../support/sqljs-db.js";

let n = 0;
function row(project: string, createMs: number, headSeq = 0): DirectoryRow {
  const uid = `sess-${(n++).toString(16).padStart(24, "0")}`;
  return { uid, project, createMs, updateMs: createMs, headSeq, headHash: "", session: new TextEncoder().encode(uid) };
}
const uidOf = (b: Uint8Array) => new TextDecoder().decode(b);

function walk(store: DirectoryStore, project: string, size: number): string[] {
  const seen: string[] = [];
  let token = "";
  for (let pages = 0; pages < 100; pages++) {
    const r = store.list(project, size, token);
    if (!r.ok) throw new Error("bad token");
    seen.push(...r.sessions.map(uidOf));
    if (r.nextPageToken === "") return seen;
    token = r.nextPageToken;
  }
  throw new Error("paging did not terminate");
}

describe("DirectoryStore", () => {
  it("list: pages newest first, ties broken by uid, each session exactly once", () => {
    const store = new DirectoryStore(createTestDb());
    const rows = [row("p", 100), row("p", 300), row("p", 200), row("p", 200), row("p", 50), row("p", 300), row("p", 10)];
    for (const r of rows) store.upsert(r);
    const expected = [...rows].sort((a, b) => b.createMs - a.createMs || (a.uid < b.uid ? -1 : 1)).map((r) => r.uid);
    expect(walk(store, "p", 2)).toEqual(expected);
    expect(walk(store, "p", 0)).toEqual(expected);
  });

  it("list: filters on the exact project, never a prefix", () => {
    const store = new DirectoryStore(createTestDb());
    const a = row("acme", 1);
    store.upsert(a);
    store.upsert(row("acme-2", 2));
    store.upsert(row("ac", 3));
    expect(walk(store, "acme", 10)).toEqual([a.uid]);
    expect(walk(store, "nope", 10)).toEqual([]);
  });

  it("list: stays stable when a newer session is created between pages", () => {
    const store = new DirectoryStore(createTestDb());
    const rows = [row("s", 10), row("s", 20), row("s", 30), row("s", 40)];
    for (const r of rows) store.upsert(r);
    const first = store.list("s", 2, "");
    if (!first.ok) throw new Error();
    store.upsert(row("s", 50));
    const second = store.list("s", 2, first.nextPageToken);
    if (!second.ok) throw new Error();
    expect([...first.sessions, ...second.sessions].map(uidOf)).toEqual([rows[3]!.uid, rows[2]!.uid, rows[1]!.uid, rows[0]!.uid]);
    expect(second.nextPageToken).toBe("");
  });

  it("list: clamps page sizes over 500 and defaults non-positive ones to 50", () => {
    const store = new DirectoryStore(createTestDb());
    for (let i = 0; i < 520; i++) store.upsert(row("big", i));
    const big = store.list("big", 10_000, "");
    const dflt = store.list("big", -3, "");
    expect(big.ok && big.sessions.length).toBe(500);
    expect(dflt.ok && dflt.sessions.length).toBe(50);
  });

  it("list: a malformed page token is refused, never read as page one", () => {
    const store = new DirectoryStore(createTestDb());
    store.upsert(row("x", 1));
    for (const bad of ["!!", "abc", pageTokenFor(1, "sess-1").slice(0, -2), btoa("12\0not-a-uid"), btoa("x\0sess-000000000000000000000000")]) {
      expect(store.list("x", 1, bad)).toEqual({ ok: false, reason: "bad_token" });
    }
    expect(parsePageToken(pageTokenFor(123, "sess-00000000000000000000000f"))).toEqual({ createMs: 123, uid: "sess-00000000000000000000000f" });
  });

  it("upsert: a report with an older head never overwrites a newer one", () => {
    const store = new DirectoryStore(createTestDb());
    const r = row("h", 1, 5);
    store.upsert({ ...r, headHash: "new" });
    store.upsert({ ...r, headSeq: 3, headHash: "old" });
    expect(store.head(r.uid)).toEqual({ seq: 5, hash: "new" });
    store.upsert({ ...r, headSeq: 6, headHash: "newer" });
    expect(store.head(r.uid)).toEqual({ seq: 6, hash: "newer" });
  });

  it("list: names the live rows of the page (index and uid); a later settled report, or a tombstone, ends it", () => {
    const store = new DirectoryStore(createTestDb());
    const [a, b, c] = [row("lv", 3, 1), row("lv", 2, 1), row("lv", 1, 1)];
    for (const r of [a, b, c]) store.upsert(r);
    store.upsert({ ...b, headSeq: 2, live: true });
    store.upsert({ ...c, headSeq: 2, live: true });
    const page = store.list("lv", 2, "");
    expect(page.ok && page.live).toEqual([{ index: 1, uid: b.uid }]);
    const next = page.ok ? store.list("lv", 2, page.nextPageToken) : undefined;
    expect(next?.ok && next.live).toEqual([{ index: 0, uid: c.uid }]);
    // The session settles its row at the same head: no longer live.
    store.upsert({ ...b, headSeq: 2 });
    store.tombstone({ ...c, headSeq: 2 }, 99);
    const after = store.list("lv", 10, "");
    expect(after.ok && after.live).toEqual([]);
    expect(after.ok && after.sessions.map(uidOf)).toEqual([a.uid, b.uid]);
  });
});
