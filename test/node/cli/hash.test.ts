/**
 * `agentctl hash` against the golden vectors of docs/contract.md §7.4: offline, event on stdin, both
 * proto names and lowerCamelCase accepted.
 */
import { describe, expect, it } from "vitest";
import { agentctl } from "./run-agentctl.js";

const G1_PROTO_NAMES = `{"execution_id":"exec-1","schema_version":1,"ts":"2023-11-14T22:13:20Z","kind":"EVENT_OUTPUT","message":{"role":"assistant","parts":[{"text":{"text":"hello"}}]},"actor":{"principal":"agent://a","issuer":"entra","subject":"sub-1"}}`;
const G1_CAMEL = `{"executionId":"exec-1","schemaVersion":1,"ts":"2023-11-14T22:13:20Z","kind":"EVENT_OUTPUT","message":{"role":"assistant","parts":[{"text":{"text":"hello"}}]},"actor":{"principal":"agent://a","issuer":"entra","subject":"sub-1"}}`;
const G1_HASH = "551bd146050c8d630b0c3b999a4445f3792a470db9bca443d8d4a67706283fcc";
const G3 = `{"execution_id":"exec-default","kind":"EVENT_EXECUTION_START","execution_start":{"input_count":"0"}}`;
const G3_HASH = "b09cbff45d5a30990c3b72be8b06af6bc509d5a29a849aab5fd42153ef10ec65";

describe("agentctl hash", () => {
  it("hash: G1 with proto field names gives the §7.4 vector", async () => {
    const r = await agentctl(["hash", "--seq", "1", "--prev-hash", ""], { stdin: G1_PROTO_NAMES });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(G1_HASH + "\n");
  });

  it("hash: G1 with lowerCamelCase JSON names gives the same hash", async () => {
    const r = await agentctl(["hash", "--seq", "1", "--prev-hash", ""], { stdin: G1_CAMEL });
    expect(r.stdout).toBe(G1_HASH + "\n");
  });

  it("hash: G3 (explicit-presence input_count 0), --prev-hash defaulting to genesis", async () => {
    const r = await agentctl(["hash", "--seq", "1"], { stdin: G3 });
    expect(r.stdout).toBe(G3_HASH + "\n");
  });

  it("hash: seq and prev_hash are part of the hash", async () => {
    const r = await agentctl(["hash", "--seq", "2", "--prev-hash", G3_HASH], { stdin: G1_PROTO_NAMES });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(r.stdout).not.toBe(G1_HASH + "\n");
  });

  it("hash: a bad event exits 1 without echoing its content", async () => {
    const r = await agentctl(["hash", "--seq", "1"], { stdin: `{"kind":"EVENT_SECRET_WORD"}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not a proto3-JSON agentsessions\.v1\.Event/);
    expect(r.stderr).not.toContain("SECRET_WORD");
  });

  it("hash: a malformed --prev-hash or a missing one for seq > 1 exits 2", async () => {
    expect((await agentctl(["hash", "--seq", "1", "--prev-hash", "xyz"], { stdin: G3 })).code).toBe(2);
    expect((await agentctl(["hash", "--seq", "3"], { stdin: G3 })).code).toBe(2);
    expect((await agentctl(["hash"], { stdin: G3 })).code).toBe(2);
  });
});
