/**
 * Every event the host writes carries its time (`Event.ts`, objects/journal/journal.ts), inside
 * the hashed event: the chain still verifies, by the host and by a third party recomputing it,
 * recovery by replay is unaffected, and the children of one fork share one FORK marker.
 */
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyChain } from "../../../proto/verify.js";
import { type Host, startHost } from "../support/host.js";

let host: Host;

beforeAll(async () => {
  host = await startHost();
});

afterAll(async () => {
  await host?.stop();
});

describe("Event.ts", () => {
  it("exec: each record of a turn carries the time it was written, in order, inside the verified chain", async () => {
    const before = Date.now();
    const s = await host.client.create({ name: "timed" });
    const uid = s.metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["one"] });
    await host.client.exec({ session: uid, inputs: ["two", "three"] });
    const after = Date.now();
    const records = await host.records(uid);
    expect(records.length).toBeGreaterThan(8);
    const times = records.map((r) => (r.event?.ts ? timestampMs(r.event.ts) : undefined));
    expect(times.every((t) => t !== undefined)).toBe(true);
    // Clocks of the test and of workerd are the same machine's; allow a second either side.
    for (const t of times) {
      expect(t!).toBeGreaterThanOrEqual(before - 1000);
      expect(t!).toBeLessThanOrEqual(after + 1000);
    }
    expect(times).toEqual([...times].sort((a, b) => a! - b!));
    expect((await host.client.verify(uid)).chainOk).toBe(true);
    expect(verifyChain(records.map((r) => ({ seq: r.seq, prevHash: r.prevHash, hash: r.contentHash, event: r.event! }))).ok).toBe(true);
  });

  it("exec: a changed time breaks the chain where it was changed", async () => {
    const s = await host.client.create({ name: "tampered time" });
    const uid = s.metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["hi"] });
    const records = await host.records(uid);
    const i = 2;
    records[i]!.event!.ts!.seconds += 1n;
    const report = verifyChain(records.map((r) => ({ seq: r.seq, prevHash: r.prevHash, hash: r.contentHash, event: r.event! })));
    expect(report.ok).toBe(false);
    expect(report.firstBadSeq).toBe(records[i]!.seq);
  });

  it("fork: the children of one fork share their FORK marker (same time, same hash) and each keeps the parent's times", async () => {
    const s = await host.client.create({ name: "parent" });
    const uid = s.metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["before the fork"] });
    const parent = await host.records(uid);
    const [a, b] = await host.client.fork(uid, { count: 2 });
    const left = await host.records(a!.metadata!.uid);
    const right = await host.records(b!.metadata!.uid);
    expect(left.slice(0, parent.length)).toEqual(parent);
    const markerL = left[parent.length]!;
    const markerR = right[parent.length]!;
    expect(markerL.event?.ts).toBeDefined();
    expect(markerL.contentHash).toBe(markerR.contentHash);
  });
});
