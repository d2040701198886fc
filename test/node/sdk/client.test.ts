/**
 * The client SDK against the shared wrangler dev: exec results, paging, verify, error lines; once
 * with Node's fetch and once with the SDK's node:http fetch (sdk/node/http-fetch.ts).
 */
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { inject, describe, expect, it } from "vitest";
import { describeError, SessionsClient } from "../../../sdk/client.js";
import { freePort } from "../../../scripts/dev-server.js";
import { nodeFetch } from "../../../sdk/node/index.js";
import { LogRecordSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ChainVerifier, servedRecordOf } from "../../../proto/verify.js";

describe.each([
  ["Node's fetch", undefined],
  ["nodeFetch", nodeFetch],
])("SessionsClient with %s", (_, fetch) => {
  const client = new SessionsClient({ server: inject("serverUrl"), fetch });

  it("exec: returns the session frame, records, outputs and the cursor for the next CAS", async () => {
    const first = await client.exec({ inputs: ["one"] });
    expect(first.outputs).toEqual(["echo:one"]);
    expect(first.cursor).toBe(5n);
    const uid = first.session.metadata!.uid;
    const second = await client.exec({ session: uid, inputs: ["two"], expectedLastSeq: first.cursor });
    expect(second.session.lastSeq).toBe(5n);
    expect(second.records.map((r) => r.seq)).toEqual([6n, 7n, 8n, 9n, 10n]);
    expect(second.cursor).toBe(10n);
  });

  it("list: walks every page of a project, newest first", async () => {
    const project = `sdk-${Date.now()}`;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await client.create({ project, name: `n${i}` })).metadata!.uid);
    const seen: string[] = [];
    for await (const s of client.list({ project, pageSize: 2 })) seen.push(s.metadata!.uid);
    expect(new Set(seen)).toEqual(new Set(made));
    expect(seen).toHaveLength(5);
  });

  it("verify: the host's chain check and replay agree with the journal", async () => {
    const t = await client.exec({ inputs: ["check"] });
    const v = await client.verify(t.session.metadata!.uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, records: 5n, replayOk: true, outputs: ["echo:check"], modelCalls: 0n });
  });

  it("replay: the records a turn committed, read back over the binary stream", async () => {
    const t = await client.exec({ inputs: ["again"] });
    const got = [];
    for await (const r of client.replay(t.session.metadata!.uid)) got.push(r);
    expect(got.map((r) => r.seq)).toEqual(t.records.map((r) => r.seq));
    expect(got.map((r) => r.contentHash)).toEqual(t.records.map((r) => r.contentHash));
    expect(got[0]!.contentHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("replayEncoded: the same records as the host encoded them, over binary and JSON alike, and they verify from their bytes", async () => {
    const t = await client.exec({ inputs: ["bytes"] });
    const uid = t.session.metadata!.uid;
    const json = new SessionsClient({ server: inject("serverUrl"), fetch, binary: false });
    for (const c of [client, json]) {
      const v = new ChainVerifier();
      const seqs: bigint[] = [];
      for await (const batch of c.replayEncoded(uid)) {
        for (const bytes of batch) {
          const r = servedRecordOf(bytes);
          expect(fromBinary(LogRecordSchema, bytes).contentHash).toBe(r.hash);
          seqs.push(r.seq);
          v.pushServed(r);
        }
      }
      expect(seqs).toEqual(t.records.map((r) => r.seq));
      expect(v.report()).toMatchObject({ ok: true, records: 5n, headHash: t.records.at(-1)!.contentHash });
    }
  });

  it("errors: a ConnectError with the server's code, and one actionable line", async () => {
    const err = await client.get("sess-000000000000000000000000").catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect(describeError(err)).toMatch(/^not_found: session not found/);
    const port = await freePort();
    const nowhere = new SessionsClient({ server: `http://127.0.0.1:${port}`, fetch });
    const down = await nowhere.get("sess-000000000000000000000000").catch((e) => e);
    expect(describeError(down, `http://127.0.0.1:${port}`)).toMatch(/cannot reach .* is the server running/);
  });
});
