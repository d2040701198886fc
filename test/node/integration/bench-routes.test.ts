/**
 * The bench routes (worker/bench.ts) against real `wrangler dev` servers: without BENCH=1 none is
 * served, and a caller learns nothing about them; with it, the in-isolate loop that `npm run
 * bench`'s `inside` row reads runs real turns through the Worker's own entry, and refuses a kind
 * it does not know with the kinds it does.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Host, startHost } from "../support/host.js";

describe("bench routes without BENCH=1 (the shared server)", () => {
  it("answer as any unknown route does", async () => {
    for (const path of ["/_bench/loop?kind=echo&n=1", "/_bench/five"]) {
      const r = await fetch(`${inject("serverUrl")}${path}`, { method: "POST" });
      expect(r.status).toBe(404);
      expect(await r.json()).toMatchObject({ code: "not_found" });
    }
  });
});

describe("the in-isolate loop with BENCH=1", () => {
  let host: Host;
  beforeAll(async () => {
    host = await startHost({ vars: { BENCH: "1" } });
  });
  afterAll(async () => {
    await host?.stop();
  });

  it("runs echo turns through the Worker's entry and times all but each session's first", async () => {
    const r = await fetch(`${host.url}/_bench/loop?kind=echo&n=3`, { method: "POST" });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { kind: string; n: number; us: number };
    expect(body).toMatchObject({ kind: "echo", n: 2 });
    expect(body.us).toBeGreaterThanOrEqual(0);
    // The turns were real: the loop's session holds three turns of five records.
    const sessions = [];
    for await (const s of host.client.list()) if (s.metadata?.name === "bench-loop") sessions.push(s);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.lastSeq).toBe(15n);
  });

  it("calls a session object straight, and the five-row floor, without touching the listing", async () => {
    for (const kind of ["object-echo", "object-noop", "five", "five-bytes", "unknown-harness", "object-refuses", "worker-refuses", "health"]) {
      const r = await fetch(`${host.url}/_bench/loop?kind=${kind}&n=2`, { method: "POST" });
      expect(r.status, kind).toBe(200);
      expect(await r.json()).toMatchObject({ kind });
    }
  });

  it("refuses a kind it does not know, naming the ones it does", async () => {
    const r = await fetch(`${host.url}/_bench/loop?kind=nope&n=1`, { method: "POST" });
    expect(r.status).toBe(400);
    expect(await r.text()).toMatch(/unknown loop kind "nope": one of health, worker-refuses, .*chat/);
  });
});
