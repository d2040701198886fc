/**
 * Valid-ish request messages for every RPC, as protobuf-es init shapes: right types, hostile
 * values. Session fields point at the seeded sessions (protected or victim), random well-formed
 * uids or malformed ones; numbers stray past their ranges; enums carry unknown numbers; Structs
 * carry random JSON. cases.ts encodes and mutates them.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { Targets } from "./cases.js";
import { randomJson } from "./json-gen.js";
import type { Rng } from "./rng.js";
import { HUGE_SIZES } from "./wire.js";

const INT64_EDGES = [0n, 1n, -1n, 2n ** 31n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)];
const INT32_EDGES = [0, -1, 1, 2 ** 31 - 1, -(2 ** 31), 129, 128, 127];
const ENUM_NUMBERS = [0, 1, 2, 3, 13, 99, 2 ** 31 - 1, -1, -(2 ** 31)];

export function uid(rng: Rng, t: Targets): string {
  return rng.weighted<() => string>([
    [35, () => rng.pick(t.protected).uid],
    [25, () => rng.pick(t.victims)],
    [15, () => `sess-${rng.hex(24)}`],
    [
      25,
      () =>
        rng.pick([
          "",
          "sess-",
          `sess-${rng.hex(23)}`,
          `sess-${rng.hex(25)}`,
          `SESS-${rng.hex(24)}`,
          `sess-${rng.hex(24).toUpperCase()}`,
          `${rng.pick(t.victims)}\u0000`,
          ` ${rng.pick(t.victims)}`,
          "../" + rng.pick(t.victims),
          "sess-" + "\u00e9".repeat(24),
          "x".repeat(rng.pick([64, 1000, 100_000])),
          rng.word(),
        ]),
    ],
  ])();
}

function int64(rng: Rng, head = 0n): bigint {
  return rng.weighted<() => bigint>([
    [3, () => rng.pick(INT64_EDGES)],
    [3, () => head + BigInt(rng.range(-3, 3))],
    [1, () => BigInt(rng.range(-1000, 1000))],
  ])();
}

function int32(rng: Rng): number {
  return rng.chance(0.5) ? rng.pick(INT32_EDGES) : rng.range(-5, 5);
}

function name(rng: Rng): string {
  return rng.pick(["", "echo", "chat", "fuzz-" + rng.pick(["a", "b", "c", "d"]), "Bad_Name", "-x", "a".repeat(64), "a".repeat(63), rng.word(), "fz\u00e9"]);
}

function struct(rng: Rng): JsonObject {
  const o: JsonObject = {};
  for (let i = rng.int(4); i > 0; i--) o[rng.word(6)] = randomJson(rng);
  return o;
}

function strMap(rng: Rng): Record<string, string> {
  const m: Record<string, string> = {};
  for (let i = rng.int(3); i > 0; i--) m[rng.word(8)] = rng.chance(0.08) ? "y".repeat(rng.pick(HUGE_SIZES)) : rng.word(16);
  return m;
}

function part(rng: Rng): unknown {
  switch (rng.int(6)) {
    case 0:
      return { part: { case: "text", value: { text: rng.chance(0.05) ? "x".repeat(rng.pick([70_000, 1_100_000])) : rng.word(40) } } };
    case 1:
      return { part: { case: "data", value: { data: struct(rng) } } };
    case 2:
      return {
        part: {
          case: "file",
          value: {
            mime: rng.word(),
            source: rng.chance(0.5) ? { case: "bytes", value: rng.bytes(rng.int(64)) } : { case: "uri", value: rng.word() },
            name: rng.word(),
            digest: rng.word(),
          },
        },
      };
    case 3:
      return {
        part: {
          case: "reasoning",
          value: { provider: rng.word(), modelId: rng.word(), opaque: { case: "opaqueBytes", value: rng.bytes(8) }, ordinal: int32(rng), summary: [] },
        },
      };
    case 4:
      return {
        part: {
          case: "toolCall",
          value: { id: rng.word(), tool: rng.word(), args: struct(rng), mediation: rng.pick(ENUM_NUMBERS), idempotencyKey: rng.word() },
        },
      };
    default:
      return {
        part: {
          case: "toolResult",
          value: { id: rng.word(), output: struct(rng), isError: rng.chance(0.5), code: rng.pick(ENUM_NUMBERS), approvalRequestSeq: int64(rng) },
        },
      };
  }
}

export function message(rng: Rng): unknown {
  return { role: rng.pick(["user", "assistant", "system", "", "tool", rng.word()]), parts: Array.from({ length: rng.int(4) }, () => part(rng)) };
}

function identity(rng: Rng): unknown {
  return rng.chance(0.6) ? undefined : { principal: rng.word(), issuer: rng.word(), subject: rng.word() };
}

/** The init shape of `method`'s request. */
export function build(rng: Rng, method: string, t: Targets): unknown {
  // Turns on victims are what reach the journal with hostile input: Exec aims at them more.
  const session = method === "Exec" && rng.chance(0.35) ? rng.pick(t.victims) : uid(rng, t);
  const head = t.protected.find((p) => p.uid === session)?.head;
  switch (method) {
    case "CreateSession":
      return {
        session: {
          metadata: { project: rng.pick(["", "fuzz", rng.word()]), name: rng.word(), uid: rng.chance(0.2) ? session : "", version: int64(rng) },
          // Mostly a harness that exists, so the request reaches the session object.
          harness: rng.chance(0.7) ? rng.pick(["", "echo"]) : name(rng),
          model: rng.word(),
          lastSeq: int64(rng),
          labels: strMap(rng),
          annotations: strMap(rng),
          origin: rng.chance(0.5) ? { source: rng.word(), uri: rng.word(), attributes: strMap(rng) } : undefined,
          identity: identity(rng),
          execState: rng.pick(ENUM_NUMBERS),
          computeState: rng.pick(ENUM_NUMBERS),
        },
      };
    case "GetSession":
    case "DeleteSession":
      return { uid: session };
    case "ListSessions":
      return {
        project: rng.pick(["", "fuzz", "default", rng.word()]),
        pageSize: int32(rng),
        pageToken: rng.pick(["", rng.word(), rng.hex(20), "MTIzAHNlc3Mt", "AAAA", "=="]),
      };
    case "Exec":
      return {
        session: rng.chance(0.06) ? "" : session,
        inputs: Array.from({ length: rng.int(3) }, () => message(rng)),
        resumeFromSeq: int64(rng),
        harness: rng.chance(0.7) ? "" : name(rng),
        config: rng.bytes(rng.int(16)),
        // Never the head of a protected session: a stale CAS is refused before anything is written.
        expectedLastSeq: head !== undefined ? head + BigInt(rng.pick([1, 2, 100, -1, -100])) : rng.chance(0.75) ? undefined : int64(rng),
        deadlineUnix: rng.chance(0.7) ? 0n : int64(rng, BigInt(Math.floor(Date.now() / 1000))),
      };
    case "Replay":
      return { session, fromSeq: int64(rng, head ?? 3n), toSeq: int64(rng, head ?? 3n) };
    case "Approve":
      return {
        session,
        executionId: rng.chance(0.5) ? rng.hex(16) : rng.word(),
        toolCallId: rng.word(),
        requestSeq: int64(rng, head ?? 3n),
        approved: rng.pick([true, false, undefined]),
        reason: rng.word(),
        identity: identity(rng),
      };
    case "Cancel":
      return { session, executionId: rng.chance(0.5) ? rng.hex(16) : rng.word(), reason: rng.pick(["", "USER", "TIMEOUT", "INTERNAL", rng.word()]) };
    case "Suspend":
      return { session };
    case "Resume":
      return { session, boot: rng.chance(0.5) };
    case "Fork": {
      const count = rng.weighted<number>([
        [6, rng.range(0, 3)],
        [2, rng.pick(INT32_EDGES)],
      ]);
      const names = rng.chance(0.3) ? Array.from({ length: rng.chance(0.7) ? Math.min(Math.max(1, count), 130) : rng.int(5) }, () => name(rng)) : [];
      return {
        session,
        atSeq: int64(rng, head ?? 3n),
        count,
        identity: rng.chance(0.1) ? (identity(rng) ?? {}) : undefined,
        labels: strMap(rng),
        childNames: names,
      };
    }
    case "RegisterHarness":
      return {
        name: name(rng),
        spec: harnessSpec(
          rng,
          rng.pick([
            { case: "remote", value: { address: rng.word() } },
            { case: "substrate", value: { atespace: rng.word(), template: rng.word() } },
            undefined,
          ]),
        ),
      };
    // Our EdgeRegistry (proto/agentsessions/edge/v1/placement.proto): the placement beside the spec.
    case "EdgeRegistry.RegisterHarness": {
      const placement = rng.pick([
        { case: "tunnel", value: { note: rng.word() } },
        // A closed port: any live describe of it fails at once.
        { case: "httpRuntime", value: { url: rng.pick(["http://127.0.0.1:9/", "ftp://x", "", rng.word(), "http://[::1"]) } },
        undefined,
      ]);
      // Now and then a spec that places it too, which is refused.
      const inSpec = rng.chance(0.1) ? { case: "remote", value: { address: rng.word() } } : undefined;
      return { name: name(rng), spec: harnessSpec(rng, inSpec), placement: { placement } };
    }
    case "GetHarness":
    case "EdgeRegistry.GetHarness":
      return { name: name(rng), observe: rng.chance(0.5) };
    case "ListHarnesses":
      return { pageSize: int32(rng), pageToken: rng.pick(["", rng.word(), "echo", "\u0000"]), includeRetired: rng.chance(0.5) };
    case "RetireHarness":
      return { name: name(rng), reason: rng.chance(0.1) ? "r".repeat(2000) : rng.word() };
    case "Verify":
      return { session, replay: rng.chance(0.3) };
    default:
      throw new Error(`no request builder for ${method}`);
  }
}

function harnessSpec(rng: Rng, placement: unknown) {
  return {
    placement,
    capabilities: { resumability: rng.pick(ENUM_NUMBERS), forkSafe: rng.chance(0.5), streaming: rng.chance(0.5) },
    descriptorId: rng.word(),
  };
}
