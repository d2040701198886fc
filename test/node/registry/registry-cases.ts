/**
 * The HarnessRegistry rules (CONTRACT.md §2.3, §3.9, §4.4, §7.6, §8; BEHAVIOUR.md §6.4) as one set
 * of cases, run in process by test/node/registry/registry-service.test.ts and against a real
 * `wrangler dev` by test/node/integration/registry.test.ts. The client must speak binary (unknown
 * fields travel only there). Names carry a random prefix so the cases can share a server.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { specDigest } from "../../../proto/canon.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import {
  type HarnessRegistry,
  HarnessSource,
  HarnessSpecSchema,
  HarnessState,
  RegisterOutcome,
  type HarnessRegistration,
  type HarnessSpec,
} from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { randomHex } from "../../../proto/ids.js";

export type RegistryClient = Client<typeof HarnessRegistry>;

const CAPS = { resumability: Resumability.STATELESS_REPLAY };

export function tunnelSpec(note = "", descriptorId = ""): HarnessSpec {
  return create(HarnessSpecSchema, { placement: { case: "tunnel", value: { note } }, capabilities: CAPS, descriptorId });
}

export function httpSpec(url: string): HarnessSpec {
  return create(HarnessSpecSchema, { placement: { case: "httpRuntime", value: { url } }, capabilities: CAPS });
}

/** The code a call failed with, or "ok". */
export async function codeOf(p: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await p;
    return "ok";
  } catch (e) {
    return ConnectError.from(e).code;
  }
}

/** A spec decoded from `bytes` after appending raw wire bytes: it carries them as unknown fields. */
function withTrailingWire(spec: HarnessSpec, extra: number[]): HarnessSpec {
  return fromBinary(HarnessSpecSchema, new Uint8Array([...toBinary(HarnessSpecSchema, spec), ...extra]));
}

const names = (rs: HarnessRegistration[]) => rs.map((r) => r.metadata!.name);

/** Every registration of a full walk at `pageSize`, checking each page's size and the order. */
export async function walk(client: RegistryClient, pageSize: number, includeRetired: boolean): Promise<HarnessRegistration[]> {
  const out: HarnessRegistration[] = [];
  let pageToken = "";
  for (let pages = 0; pages < 1000; pages++) {
    const r = await client.listHarnesses({ pageSize, pageToken, includeRetired });
    if (r.nextPageToken !== "") expect(r.harnesses.length).toBe(pageSize);
    out.push(...r.harnesses);
    if (r.nextPageToken === "") {
      const all = names(out);
      expect(all, "strictly ascending, no repeats").toEqual([...new Set(all)].sort());
      return out;
    }
    pageToken = r.nextPageToken;
  }
  throw new Error("paging did not terminate");
}

export function registryCases(clientOf: () => RegistryClient): void {
  const prefix = `t${randomHex(3)}`;
  const name = (s: string) => `${prefix}-${s}`;
  const client = () => clientOf();

  describe("RegisterHarness", () => {
    it("register: names that are not RFC 1123 labels are INVALID_ARGUMENT; 63 characters is fine", async () => {
      for (const bad of ["", "Upper", "-lead", "trail-", "a_b", "a.b", "sp ace", "é", name("x").padEnd(64, "x")]) {
        expect(await codeOf(client().registerHarness({ name: bad, spec: tunnelSpec() })), bad).toBe(Code.InvalidArgument);
      }
      const long = name("long").padEnd(63, "7");
      expect((await client().registerHarness({ name: long, spec: tunnelSpec() })).outcome).toBe(RegisterOutcome.CREATED);
    });

    it("register: a missing spec, no placement, or missing/UNSPECIFIED resumability is INVALID_ARGUMENT", async () => {
      const n = name("spec");
      const specs = [
        undefined,
        create(HarnessSpecSchema, { capabilities: CAPS }),
        create(HarnessSpecSchema, { placement: { case: "tunnel", value: {} } }),
        create(HarnessSpecSchema, { placement: { case: "tunnel", value: {} }, capabilities: { forkSafe: true } }),
      ];
      for (const spec of specs) expect(await codeOf(client().registerHarness({ name: n, spec }))).toBe(Code.InvalidArgument);
      expect(await codeOf(client().getHarness({ name: n }))).toBe(Code.NotFound);
    });

    it("register: empty remote address, substrate atespace/template and bad http_runtime urls are INVALID_ARGUMENT", async () => {
      const specs = [
        create(HarnessSpecSchema, { placement: { case: "remote", value: { address: "" } }, capabilities: CAPS }),
        create(HarnessSpecSchema, { placement: { case: "substrate", value: { atespace: "a", template: "" } }, capabilities: CAPS }),
        create(HarnessSpecSchema, { placement: { case: "substrate", value: { atespace: "", template: "t" } }, capabilities: CAPS }),
        httpSpec(""),
        httpSpec("not a url"),
        httpSpec("ftp://runtime.example/"),
        httpSpec("/relative/path"),
        httpSpec("https://user:secret@runtime.example/"),
      ];
      for (const spec of specs) {
        expect(await codeOf(client().registerHarness({ name: name("place"), spec })), JSON.stringify(spec.placement)).toBe(Code.InvalidArgument);
      }
    });

    it("register: unknown fields (top level or nested) and unknown enum numbers in the spec are INVALID_ARGUMENT", async () => {
      const unknownTop = withTrailingWire(tunnelSpec(), [0x38, 0x01]); // field 7, varint 1
      const unknownNested = withTrailingWire(tunnelSpec(), [0x1a, 0x02, 0x30, 0x01]); // capabilities{field 6: 1}
      const unknownEnum = create(HarnessSpecSchema, { placement: { case: "tunnel", value: {} }, capabilities: { resumability: 9 as Resumability } });
      expect(unknownTop.$unknown?.length, "the fixture carries an unknown field").toBe(1);
      for (const spec of [unknownTop, unknownNested, unknownEnum]) {
        expect(await codeOf(client().registerHarness({ name: name("unknown"), spec }))).toBe(Code.InvalidArgument);
      }
      expect(await codeOf(client().getHarness({ name: name("unknown") }))).toBe(Code.NotFound);
    });

    it("register: a canonical spec of 4096 bytes is accepted and 4097 is INVALID_ARGUMENT", async () => {
      const base = specDigest(tunnelSpec("", "x")).canonical.length;
      const at = (bytes: number) => tunnelSpec("", "x".repeat(1 + bytes - base));
      expect(specDigest(at(4096)).canonical.length).toBe(4096);
      expect(await codeOf(client().registerHarness({ name: name("big"), spec: at(4097) }))).toBe(Code.InvalidArgument);
      expect((await client().registerHarness({ name: name("big"), spec: at(4096) })).outcome).toBe(RegisterOutcome.CREATED);
    });

    it("register: built-in names, served here or not, are ALREADY_EXISTS", async () => {
      for (const n of ["echo", "chat", "hold", "tools"]) {
        expect(await codeOf(client().registerHarness({ name: n, spec: tunnelSpec() })), n).toBe(Code.AlreadyExists);
      }
    });

    it("register: remote and substrate placements are FAILED_PRECONDITION naming the placements served", async () => {
      const specs = [
        create(HarnessSpecSchema, { placement: { case: "remote", value: { address: "127.0.0.1:9000" } }, capabilities: CAPS }),
        create(HarnessSpecSchema, { placement: { case: "substrate", value: { atespace: "a", template: "t" } }, capabilities: CAPS }),
      ];
      for (const spec of specs) {
        const err = await client()
          .registerHarness({ name: name("grpc"), spec })
          .then(() => undefined, ConnectError.from);
        expect(err?.code).toBe(Code.FailedPrecondition);
        expect(err?.rawMessage).toMatch(/tunnel/);
        expect(err?.rawMessage).toMatch(/http_runtime/);
      }
      expect(await codeOf(client().getHarness({ name: name("grpc") }))).toBe(Code.NotFound);
    });

    it("register: CREATED, then UNCHANGED; the digest is specDigest's and the spec round-trips", async () => {
      const n = name("outcomes");
      const spec = tunnelSpec("laptop", "my-agent");
      const created = await client().registerHarness({ name: n, spec });
      expect(created.outcome).toBe(RegisterOutcome.CREATED);
      const h = created.harness!;
      expect(h.specDigest).toBe(specDigest(spec).digest);
      expect(h.specDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(h.metadata!.uid).toMatch(/^harness-[0-9a-f]{24}$/);
      expect(h.metadata!.createTime).toBeDefined();
      expect(h.state).toBe(HarnessState.ACTIVE);
      expect(h.source).toBe(HarnessSource.REGISTERED);
      expect(toBinary(HarnessSpecSchema, h.spec!)).toEqual(toBinary(HarnessSpecSchema, spec));
      const again = await client().registerHarness({ name: n, spec: tunnelSpec("laptop", "my-agent") });
      expect(again.outcome).toBe(RegisterOutcome.UNCHANGED);
      expect(again.harness!.metadata!.uid).toBe(h.metadata!.uid);
      expect(again.harness!.specDigest).toBe(h.specDigest);
    });

    it("register: a different spec under a taken name is ALREADY_EXISTS, ACTIVE or RETIRED", async () => {
      const n = name("taken");
      await client().registerHarness({ name: n, spec: tunnelSpec("a") });
      expect(await codeOf(client().registerHarness({ name: n, spec: tunnelSpec("b") }))).toBe(Code.AlreadyExists);
      expect(await codeOf(client().registerHarness({ name: n, spec: httpSpec("https://runtime.example/") }))).toBe(Code.AlreadyExists);
      await client().retireHarness({ name: n, reason: "" });
      expect(await codeOf(client().registerHarness({ name: n, spec: tunnelSpec("b") }))).toBe(Code.AlreadyExists);
      expect((await client().getHarness({ name: n })).specDigest).toBe(specDigest(tunnelSpec("a")).digest);
    });

    it("register: the same spec on a RETIRED name is REACTIVATED, ACTIVE again with no retirement", async () => {
      const n = name("phoenix");
      const spec = httpSpec("https://runtime.example/v1");
      const created = await client().registerHarness({ name: n, spec });
      await client().retireHarness({ name: n, reason: "maintenance" });
      const back = await client().registerHarness({ name: n, spec });
      expect(back.outcome).toBe(RegisterOutcome.REACTIVATED);
      expect(back.harness!.state).toBe(HarnessState.ACTIVE);
      expect(back.harness!.metadata!.uid).toBe(created.harness!.metadata!.uid);
      expect(back.harness!.retireTime).toBeUndefined();
      expect(back.harness!.retireReason).toBe("");
      expect((await client().registerHarness({ name: n, spec })).outcome).toBe(RegisterOutcome.UNCHANGED);
    });

    it("register: spec_digest of a spec without our placements is the published vector's (§7.6)", () => {
      // The extension fields change nothing for specs that do not use them.
      const spec = create(HarnessSpecSchema, {
        placement: { case: "remote", value: { address: "127.0.0.1:9000" } },
        capabilities: CAPS,
        descriptorId: "echo",
      });
      expect(specDigest(spec).digest).toBe("sha256:f0c96c8b67d5dc75be557f64ccd59496eaf9cfb102754ee54e9d4c571eb2eafc");
      expect(specDigest(tunnelSpec()).canonical).toBe('{"capabilities":{"resumability":"RESUMABILITY_STATELESS_REPLAY"},"tunnel":{}}');
    });
  });

  describe("GetHarness", () => {
    it("get: an empty name is INVALID_ARGUMENT; unknown or malformed names are NOT_FOUND", async () => {
      expect(await codeOf(client().getHarness({ name: "" }))).toBe(Code.InvalidArgument);
      expect(await codeOf(client().getHarness({ name: name("nobody") }))).toBe(Code.NotFound);
      expect(await codeOf(client().getHarness({ name: "Not A Name" }))).toBe(Code.NotFound);
    });

    it("get: a built-in is STATIC and ACTIVE with no spec, digest or uid; observe describes it", async () => {
      const echo = await client().getHarness({ name: "echo" });
      expect(echo.source).toBe(HarnessSource.STATIC);
      expect(echo.state).toBe(HarnessState.ACTIVE);
      expect(echo.spec).toBeUndefined();
      expect(echo.specDigest).toBe("");
      expect(echo.metadata!.uid).toBe("");
      expect(echo.observed).toBeUndefined();
      const observed = await client().getHarness({ name: "echo", observe: true });
      expect(observed.observed?.id).toBe("echo");
    });

    it("get: a registered one has its spec and digest; observe reports why it cannot describe it", async () => {
      const n = name("gettable");
      const spec = httpSpec("http://127.0.0.1:1/runtime");
      await client().registerHarness({ name: n, spec });
      const h = await client().getHarness({ name: n });
      expect(h.source).toBe(HarnessSource.REGISTERED);
      expect(h.specDigest).toBe(specDigest(spec).digest);
      expect(h.spec?.placement).toEqual(spec.placement);
      expect(h.observeError).toBe("");
      const o = await client().getHarness({ name: n, observe: true });
      // Nothing answers at that URL: observing says why, and never fails the call.
      expect(o.observed).toBeUndefined();
      expect(o.observeError).not.toBe("");
    });
  });

  describe("ListHarnesses", () => {
    it("list: a negative page_size or a token this server did not issue is INVALID_ARGUMENT", async () => {
      expect(await codeOf(client().listHarnesses({ pageSize: -1 }))).toBe(Code.InvalidArgument);
      const notAName = btoa("Bad Name").replace(/=+$/, "");
      for (const pageToken of ["!!!", "A", notAName, "YWJj=="]) {
        expect(await codeOf(client().listHarnesses({ pageToken })), pageToken).toBe(Code.InvalidArgument);
      }
    });

    it("list: statics and registrations merged in name order, paged past the page size, retired only when asked", async () => {
      const mine = ["k", "b", "h", "e", "a", "i", "c"].map((s) => name(`page-${s}`));
      for (const n of mine) await client().registerHarness({ name: n, spec: tunnelSpec(n) });
      await client().retireHarness({ name: name("page-e"), reason: "" });

      const all = await walk(client(), 3, true);
      expect(names(all).filter((n) => n.startsWith(name("page-")))).toEqual([...mine].sort());
      const echo = all.find((h) => h.metadata!.name === "echo");
      expect(echo?.source).toBe(HarnessSource.STATIC);
      expect(all.filter((h) => h.source === HarnessSource.REGISTERED).every((h) => h.specDigest.startsWith("sha256:"))).toBe(true);

      const active = await walk(client(), 2, false);
      expect(names(active).filter((n) => n.startsWith(name("page-")))).toEqual([...mine].filter((n) => n !== name("page-e")).sort());
      expect(active.every((h) => h.state === HarnessState.ACTIVE)).toBe(true);
    });

    it("list: page_size 0 means 50", async () => {
      await Promise.all(Array.from({ length: 51 }, (_, i) => client().registerHarness({ name: name(`many-${i}`), spec: tunnelSpec() })));
      const r = await client().listHarnesses({ pageSize: 0 });
      expect(r.harnesses.length).toBe(50);
      expect(r.nextPageToken).not.toBe("");
      const next = await client().listHarnesses({ pageSize: 0, pageToken: r.nextPageToken });
      expect(names(next.harnesses)[0]! > names(r.harnesses)[49]!).toBe(true);
    });
  });

  describe("RetireHarness", () => {
    it("retire: an empty name or a reason over 1024 bytes is INVALID_ARGUMENT; 1024 bytes is fine", async () => {
      const n = name("reason");
      await client().registerHarness({ name: n, spec: tunnelSpec() });
      expect(await codeOf(client().retireHarness({ name: "", reason: "" }))).toBe(Code.InvalidArgument);
      // 513 two-byte characters: 1026 bytes, though only 513 characters.
      expect(await codeOf(client().retireHarness({ name: n, reason: "é".repeat(513) }))).toBe(Code.InvalidArgument);
      expect((await client().getHarness({ name: n })).state).toBe(HarnessState.ACTIVE);
      const ok = await client().retireHarness({ name: n, reason: "é".repeat(512) });
      expect(ok.retireReason).toBe("é".repeat(512));
    });

    it("retire: a built-in is FAILED_PRECONDITION; an unknown name is NOT_FOUND", async () => {
      for (const n of ["echo", "chat"]) expect(await codeOf(client().retireHarness({ name: n, reason: "" })), n).toBe(Code.FailedPrecondition);
      expect(await codeOf(client().retireHarness({ name: name("ghost"), reason: "" }))).toBe(Code.NotFound);
    });

    it("retire: RETIRED with time and reason; retiring again is OK and keeps the first time and reason", async () => {
      const n = name("retiree");
      await client().registerHarness({ name: n, spec: tunnelSpec() });
      const first = await client().retireHarness({ name: n, reason: "replaced by v2" });
      expect(first.state).toBe(HarnessState.RETIRED);
      expect(first.retireTime).toBeDefined();
      expect(first.retireReason).toBe("replaced by v2");
      const again = await client().retireHarness({ name: n, reason: "other" });
      expect(again.state).toBe(HarnessState.RETIRED);
      expect(again.retireReason).toBe("replaced by v2");
      expect(again.retireTime).toEqual(first.retireTime);
      expect(again.metadata!.version).toBe(first.metadata!.version);
      const got = await client().getHarness({ name: n });
      expect(got.state).toBe(HarnessState.RETIRED);
      expect(got.retireReason).toBe("replaced by v2");
    });
  });
}
