/**
 * ateapi failures as the host sees them through the bridge (runtimes/substrate/substrate-error.ts):
 * lease conflicts retried, no free worker and an unreachable control plane retryable with a delay,
 * the bridge's own credentials refused as the operator's problem, and whatever a failed Create made
 * removed again. Faults are injected in the stand-in ateapi (test/fixtures/ateapi/faults.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../scripts/dev-server.js";
import { isRetryableRuntimeError, retryAfterMsOf } from "../../../runtimes/http/index.js";
import { classifyAteapiFailure } from "../../../runtimes/substrate/index.js";
import { startSubstrateFixture, uid, type SubstrateFixture } from "./support.js";
import { rejection } from "../support/rejection.js";

describe("ateapi codes", () => {
  it("classify: NotFound, AlreadyExists and FailedPrecondition are terminal; Aborted and ResourceExhausted retryable; the rest the bridge's fault", () => {
    const table = [
      [Code.NotFound, false, Code.NotFound],
      [Code.AlreadyExists, false, Code.AlreadyExists],
      [Code.FailedPrecondition, false, Code.FailedPrecondition],
      [Code.Aborted, true, Code.Aborted],
      [Code.ResourceExhausted, true, Code.ResourceExhausted],
      [Code.Unavailable, true, Code.Unavailable],
      [Code.DeadlineExceeded, true, Code.Unavailable],
      [Code.InvalidArgument, false, Code.Internal],
      [Code.Unauthenticated, false, Code.Internal],
      [Code.Internal, false, Code.Internal],
    ] as const;
    for (const [code, retryable, out] of table) {
      const got = classifyAteapiFailure(new ConnectError("x", code));
      expect({ code: Code[code], retryable: got.retryable, out: Code[got.code] }).toEqual({ code: Code[code], retryable, out: Code[out] });
    }
  });
});

describe("faults on create", () => {
  let f: SubstrateFixture;
  beforeAll(async () => {
    f = await startSubstrateFixture();
  });
  afterEach(() => f.standin.faults.clear());
  afterAll(async () => {
    await f?.close();
  });

  it("create: ABORTED once on ResumeActor (a lease conflict) is retried and the create succeeds", async () => {
    const u = uid();
    f.standin.faults.fail({ method: "ResumeActor", match: (s) => s === u, code: Code.Aborted });
    const inc = await f.runtime.create(f.spec(u));
    expect(f.standin.calls.filter((c) => c.subject === u).map((c) => c.method)).toEqual(["GetActor", "CreateActor", "ResumeActor", "ResumeActor"]);
    expect(await f.tunnel.exec(u)).toEqual(["1"]);
    await f.runtime.stop(inc);
  });

  it("create: RESOURCE_EXHAUSTED from CreateActor is retryable with a delay, and no actor exists", async () => {
    const u = uid();
    f.standin.faults.fail({ method: "CreateActor", match: (s) => s === u, code: Code.ResourceExhausted, message: "atespace quota reached" });
    const e = await rejection(f.runtime.create(f.spec(u)));
    expect(isRetryableRuntimeError(e)).toBe(true);
    expect(retryAfterMsOf(e)).toBe(2_000);
    expect(e.rawMessage).toContain(`CreateActor agentsessions/${u}: atespace quota reached (retryable)`);
    expect(f.standin.actor(u)).toBeUndefined();
  });

  it("create: no free worker on ResumeActor is retryable, and the actor it created is removed", async () => {
    const u = uid();
    f.standin.faults.fail({ method: "ResumeActor", match: (s) => s === u, code: Code.ResourceExhausted, message: "no free workers available" });
    const e = await rejection(f.runtime.create(f.spec(u)));
    expect(isRetryableRuntimeError(e)).toBe(true);
    expect(e.rawMessage).toContain("no free workers available");
    expect(f.standin.actor(u)).toBeUndefined();
    // A retry starts clean.
    const inc = await f.runtime.create(f.spec(u));
    expect(await f.tunnel.exec(u)).toEqual(["1"]);
    await f.runtime.stop(inc);
  });

  it("create: a server that does not know a field we sent (INVALID_ARGUMENT) is INTERNAL, naming the API generation", async () => {
    const u = uid();
    f.standin.faults.fail({ method: "GetActor", match: (s) => s === u, code: Code.InvalidArgument, message: "unknown field 3" });
    const e = await rejection(f.runtime.create(f.spec(u)));
    expect(e.rawMessage).toContain("pinned to this server's API generation");
    expect(f.standin.actor(u)).toBeUndefined();
  });
});

describe("reaching ateapi", () => {
  it("unreachable: a closed port is UNAVAILABLE, retryable, naming the address", async () => {
    const port = await freePort();
    const f = await startSubstrateFixture({ bridge: { ateapiUrl: `http://127.0.0.1:${port}` } });
    try {
      const u = uid();
      const e = await rejection(f.runtime.create(f.spec(u)));
      expect(e.code).toBe(Code.Unavailable);
      expect(isRetryableRuntimeError(e)).toBe(true);
      expect(e.rawMessage).toContain(`ateapi http://127.0.0.1:${port} GetActor agentsessions/${u}: unreachable`);
      expect(e.rawMessage).toContain(`check the address http://127.0.0.1:${port}`);
    } finally {
      await f.close();
    }
  });

  it("credentials: without its token the bridge is refused (INTERNAL, naming the flag); the token file is read on every call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ateapi-token-"));
    const file = join(dir, "token");
    writeFileSync(file, "old-token\n");
    const f = await startSubstrateFixture({ standin: { token: "sa-token-1" }, bridge: { ateapiTokenFile: file } });
    try {
      const u = uid();
      const e = await rejection(f.runtime.create(f.spec(u)));
      expect(isRetryableRuntimeError(e)).toBe(true); // INTERNAL: the host may retry once it is fixed
      expect(e.rawMessage).toContain("refused the bridge's credentials");
      expect(e.rawMessage).toContain("--ateapi-token-file");
      // The projected token rotates: the next call reads the new one.
      writeFileSync(file, "sa-token-1\n");
      const inc = await f.runtime.create(f.spec(u));
      expect(await f.tunnel.exec(u)).toEqual(["1"]);
      await f.runtime.stop(inc);
    } finally {
      await f.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
