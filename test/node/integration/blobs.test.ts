/**
 * Large parts out of the row (docs/blobs.md), against a real `wrangler dev` with its local R2
 * bucket: a 50 MB tool result from a stand-in executor reaches the harness whole (live and from
 * history) while the journal holds a reference; the inline limit is exact; a blob changed in the
 * bucket fails verification; GetBlob answers only for a digest the caller's session references;
 * a fork shares its parent's blobs and deletion erases them only when no session owns them; an
 * export carries the blobs and `agentctl verify --export` checks them.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BLOB_REF_KEY, blobRefsOf } from "../../../proto/blob-ref.js";
import { EventKind, EventSchema, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { agentctl } from "../cli/run-agentctl.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { startHost, type Host } from "../support/host.js";

const sha = (b: string | Uint8Array) => createHash("sha256").update(b).digest("hex");
const KEYS = {
  a: { token: "tok-blobs-a", tenant: "blobs-a", roles: ["read", "write"] },
  b: { token: "tok-blobs-b", tenant: "blobs-b", roles: ["read", "write"] },
};
const utf8 = new TextEncoder();

let host: Host;
let executor: FakeExecutor;
let scratch: string;
const asB = () => new SessionsClient({ server: host.url, token: KEYS.b.token });
const cli = (args: string[]) => agentctl(["--server", host.url, ...args], { env: { AGENTSESSIONS_TOKEN: KEYS.a.token } });

beforeAll(async () => {
  executor = await startFakeExecutor();
  scratch = mkdtempSync(join(tmpdir(), "agentsessions-blobs-"));
  host = await startHost({
    vars: {
      AUTH_MODE: "keys",
      AUTH_KEYS: JSON.stringify(
        Object.entries(KEYS).map(([id, k]) => ({ id, sha256: sha(k.token), tenant: k.tenant, principal: `${id}@blobs`, roles: k.roles })),
      ),
      TEST_HARNESSES: "1",
      TOOL_EXECUTOR_URL: executor.url,
      TOOL_EXECUTOR_TIMEOUT_MS: "300000",
    },
    token: KEYS.a.token,
  });
}, 120_000);

afterAll(async () => {
  await host?.stop();
  await executor?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** The local bucket's object files (miniflare keeps each R2 object's bytes in one file). */
function bucketFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.includes(`${join("r2", "agentsessions-blobs")}`)) out.push(p);
    }
  };
  walk(host.server.persistDir);
  return out;
}

function filesOfSize(n: number): string[] {
  return bucketFiles().filter((f) => statSync(f).size === n);
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const config = (o: object) => utf8.encode(JSON.stringify(o));
const ofKind = (records: LogRecord[], kind: EventKind) => records.filter((r) => r.event?.kind === kind);
const storedBytes = (r: LogRecord) => toBinary(EventSchema, r.event!).length;

/** A session with one INPUT of `text` (the tools harness with no calls: just the input and its OUTPUT). */
async function sessionWithInput(text: string): Promise<{ uid: string; records: LogRecord[] }> {
  const s = await host.client.create({ harness: "tools" });
  const uid = s.metadata!.uid;
  await host.client.exec({ session: uid, inputs: [text], config: config({}) });
  return { uid, records: await host.records(uid) };
}

describe("large parts out of the row", () => {
  it("exec: a 50 MB tool result reaches the harness whole, live and from history, while the journal holds its reference; GetBlob returns the same bytes", async () => {
    // ASCII, so the isolate holds it as one byte per character (a 50 MB string, not 100 MB).
    const unit = "0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTUVWXYZ_+/\n";
    const big = unit.repeat(Math.ceil((50 * 1024 * 1024) / unit.length));
    const bigBytes = utf8.encode(big);
    const want = `sha256=${sha(bigBytes)} bytes=${bigBytes.length}`;
    executor.next = () => ({ kind: "ok", output: { rows: 1 }, content: big });

    const s = await host.client.create({ harness: "tools" });
    const uid = s.metadata!.uid;
    const first = await host.client.exec({ session: uid, inputs: ["fetch"], config: config({ calls: [{ tool: "big" }], digest: true }) });
    expect(first.outputs).toEqual([`big: ok CODE_UNSPECIFIED ${want}`]);

    const records = await host.records(uid);
    const [result] = ofKind(records, EventKind.EVENT_TOOL_RESULT);
    const body = result!.event!.body;
    expect(body.case).toBe("result");
    const part = body.case === "result" ? body.value.content[0]!.part : undefined;
    expect(part?.case).toBe("data");
    const ref = part?.case === "data" ? (part.value.data?.[BLOB_REF_KEY] as Record<string, string>) : undefined;
    expect(ref).toMatchObject({ part: "text", digest: `sha256:${sha(bigBytes)}`, bytes: String(bigBytes.length) });
    // The record as stored is small: the bytes are in the bucket, the reference in the chain.
    expect(storedBytes(result!)).toBeLessThan(2_000);

    // The next turn's harness reads its history: the host resolved the reference before handing it over.
    const second = await host.client.exec({ session: uid, inputs: ["again"], config: config({ digest: true }) });
    expect(second.outputs[0]!.split("\n")).toContain(`history tool_result: ${want}`);

    const fetched = await host.client.getBlob(uid, sha(bigBytes));
    expect(fetched.length).toBe(bigBytes.length);
    expect(Buffer.compare(Buffer.from(fetched.buffer, fetched.byteOffset, fetched.length), Buffer.from(bigBytes))).toBe(0);

    const audit = await host.client.verify(uid, { replay: true });
    expect({ chainOk: audit.chainOk, blobsOk: audit.blobsOk, checked: audit.blobsChecked, replayOk: audit.replayOk }).toEqual({
      chainOk: true,
      blobsOk: true,
      checked: 1n,
      replayOk: true,
    });
    executor.next = () => ({ kind: "ok" });
  }, 600_000);

  it("exec: a part of exactly BLOB_INLINE_MAX_BYTES stays in the row, one byte more becomes a reference", async () => {
    const under = await sessionWithInput("u".repeat(65_536));
    const over = await sessionWithInput("o".repeat(65_537));
    const inputOf = (records: LogRecord[]) => ofKind(records, EventKind.EVENT_INPUT)[0]!.event!;
    const u = inputOf(under.records).body;
    const o = inputOf(over.records).body;
    expect(u.case === "message" && u.value.parts[0]!.part.case).toBe("text");
    expect(o.case === "message" && o.value.parts[0]!.part.case).toBe("data");
    expect(blobRefsOf(inputOf(under.records))).toEqual([]);
    expect(blobRefsOf(inputOf(over.records)).map((r) => r.bytes)).toEqual([65_537]);
    // The SDK resolves the reference for a reader, checking the digest.
    const [resolved] = await host.client.resolveRecords(over.uid, ofKind(over.records, EventKind.EVENT_INPUT));
    const rb = resolved!.event!.body;
    expect(rb.case === "message" && rb.value.parts[0]!.part.case === "text" && rb.value.parts[0]!.part.value.text).toBe("o".repeat(65_537));
  }, 120_000);

  it("verify: a blob changed in the bucket fails Audit.Verify, agentctl verify and GetBlob", async () => {
    const text = "t".repeat(70_001);
    const { uid } = await sessionWithInput(text);
    expect((await host.client.verify(uid)).blobsOk).toBe(true);
    const [file] = filesOfSize(70_001);
    expect(file).toBeDefined();
    const bytes = readFileSync(file!);
    bytes[12_345] = "x".charCodeAt(0);
    writeFileSync(file!, bytes);

    const audit = await host.client.verify(uid);
    expect(audit.chainOk).toBe(true);
    expect(audit.blobsOk).toBe(false);
    expect(audit.blobDetail).toContain(`sha256:${sha(text)}`);
    expect(audit.blobDetail).toContain("does not match its digest");

    const run = await cli(["verify", "--session", uid]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("BLOB TAMPERED");

    const err = await host.client.getBlob(uid, sha(text)).catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.DataLoss);
  }, 120_000);

  it("getBlob: NOT_FOUND across tenants and for a digest the session does not reference", async () => {
    const text = "g".repeat(70_002);
    const { uid } = await sessionWithInput(text);
    expect((await host.client.getBlob(uid, sha(text))).length).toBe(70_002);

    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => "answered",
        (e: unknown) => Code[ConnectError.from(e).code],
      );
    // Tenant b cannot reach a's session, nor a's blob through a session of its own.
    expect(await codeOf(asB().getBlob(uid, sha(text)))).toBe("NotFound");
    const own = await asB().create({ harness: "tools" });
    expect(await codeOf(asB().getBlob(own.metadata!.uid, sha(text)))).toBe("NotFound");
    // A digest a's session never referenced, even one stored for another of a's sessions.
    expect(await codeOf(host.client.getBlob(uid, sha("nothing")))).toBe("NotFound");
    const other = await sessionWithInput("h".repeat(70_003));
    expect(await codeOf(host.client.getBlob(uid, sha("h".repeat(70_003))))).toBe("NotFound");
    expect((await host.client.getBlob(other.uid, sha("h".repeat(70_003)))).length).toBe(70_003);
  }, 120_000);

  it("fork: children share the parent's blob (one object); deleting the parent keeps it, deleting the last owner erases it", async () => {
    const text = "f".repeat(70_004);
    const { uid: parent } = await sessionWithInput(text);
    expect(filesOfSize(70_004)).toHaveLength(1);
    const [child] = await host.client.fork(parent);
    const childUid = child!.metadata!.uid;
    // The child's journal names the same blob; nothing was copied.
    expect((await host.client.getBlob(childUid, sha(text))).length).toBe(70_004);
    expect(filesOfSize(70_004)).toHaveLength(1);

    await host.client.delete(parent);
    expect(filesOfSize(70_004)).toHaveLength(1);
    expect((await host.client.getBlob(childUid, sha(text))).length).toBe(70_004);
    const audit = await host.client.verify(childUid);
    expect([audit.chainOk, audit.blobsOk, audit.blobsChecked]).toEqual([true, true, 1n]);

    await host.client.delete(childUid);
    await until("the blob to be erased", () => filesOfSize(70_004).length === 0);
  }, 120_000);

  it("export: writes each referenced blob beside the journal, and verify --export checks them offline", async () => {
    const text = "e".repeat(70_005);
    const { uid } = await sessionWithInput(text);
    const out = join(scratch, "journal.sqlite");
    const run = await cli(["export", "--session", uid, "--out", out]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("and 1 blobs to");
    const blobFile = join(scratch, "blobs", sha(text));
    expect(readFileSync(blobFile, "utf8")).toBe(text);

    const ok = await agentctl(["verify", "--export", out]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain("BLOBS VERIFIED 1 blobs");

    writeFileSync(blobFile, "E" + text.slice(1));
    const bad = await agentctl(["verify", "--export", out]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`BLOB TAMPERED: blob sha256:${sha(text)}`);
    rmSync(blobFile);
    const gone = await agentctl(["verify", "--export", out]);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toContain("is missing from");
  }, 120_000);
});
