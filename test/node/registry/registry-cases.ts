/**
 * The HarnessRegistry rules (docs/contract.md §2.3, §3.9, §4.4, §7.6, §8; docs/behaviour.md §6.4) as one set
 * of cases, run in process by test/node/registry/registry-service.test.ts and against a real
 * `wrangler dev` by test/node/integration/registry.test.ts. The clients must speak binary (unknown
 * fields travel only there). Names carry a random prefix so the cases can share a server.
 *
 * Our placements (tunnel, http_runtime) are registered through agentsessions.edge.v1.EdgeRegistry
 * beside a placement-free spec (`register` picks the service); the contract's HarnessRegistry
 * reads, lists and retires every registration.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { specDigest } from "../../../proto/canon.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { EdgePlacementSchema, type EdgePlacement, type EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import {
  type HarnessRegistry,
  HarnessSource,
  HarnessSpecSchema,
  HarnessState,
  RegisterOutcome,
  type HarnessRegistration,
  type HarnessSpec,
  type RegisterHarnessResponse,
} from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { randomHex } from "../../../proto/ids.js";

export type RegistryClient = Client<typeof HarnessRegistry>;
export type EdgeRegistryClient = Client<typeof EdgeRegistry>;
export interface RegistryClients {
  registry: RegistryClient;
  edge: EdgeRegistryClient;
}

const CAPS = { resumability: Resumability.STATELESS_REPLAY };

/** A registration of one of our placements: a spec with no placement, and the placement beside it. */
export interface EdgeSpec {
  spec: HarnessSpec;
  placement: EdgePlacement;
}

export function tunnelSpec(note = "", descriptorId = ""): EdgeSpec {
  return {
    spec: create(HarnessSpecSchema, { capabilities: CAPS, descriptorId }),
    placement: create(EdgePlacementSchema, { placement: { case: "tunnel", value: { note } } }),
  };
}

export function httpSpec(url: string): EdgeSpec {
  return {
    spec: create(HarnessSpecSchema, { capabilities: CAPS }),
    placement: create(EdgePlacementSchema, { placement: { case: "httpRuntime", value: { url } } }),
  };
}

const isEdgeSpec = (s: EdgeSpec | HarnessSpec | undefined): s is EdgeSpec => s !== undefined && "placement" in s && !("$typeName" in s);

/**
 * Registers through the service that takes it (ours for an EdgeSpec, the contract's for a bare
 * spec), answering as the contract's RegisterHarness does.
 */
export async function register(c: RegistryClients, name: string, s: EdgeSpec | HarnessSpec | undefined): Promise<RegisterHarnessResponse> {
  if (!isEdgeSpec(s)) return c.registry.registerHarness({ name, spec: s });
  const r = await c.edge.registerHarness({ name, spec: s.spec, placement: s.placement });
  return { $typeName: "agentsessions.v1.RegisterHarnessResponse", harness: r.harness?.harness, outcome: r.outcome };
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

export function registryCases(clientsOf: () => RegistryClients): void {
  const prefix = `t${randomHex(3)}`;
  const name = (s: string) => `${prefix}-${s}`;
  const client = () => clientsOf().registry;
  const edge = () => clientsOf().edge;
  const reg = (n: string, s: EdgeSpec | HarnessSpec | undefined) => register(clientsOf(), n, s);

  describe("RegisterHarness", () => {
    it("register: names that are not RFC 1123 labels are INVALID_ARGUMENT; 63 characters is fine", async () => {
      for (const bad of ["", "Upper", "-lead", "trail-", "a_b", "a.b", "sp ace", "é", name("x").padEnd(64, "x")]) {
        expect(await codeOf(reg(bad, tunnelSpec())), bad).toBe(Code.InvalidArgument);
      }
      const long = name("long").padEnd(63, "7");
      expect((await reg(long, tunnelSpec())).outcome).toBe(RegisterOutcome.CREATED);
    });

    it("register: a missing spec, no placement, or missing/UNSPECIFIED resumability is INVALID_ARGUMENT", async () => {
      const n = name("spec");
      const tunnel = tunnelSpec().placement;
      const specs = [
        undefined,
        create(HarnessSpecSchema, { capabilities: CAPS }),
        { spec: create(HarnessSpecSchema), placement: tunnel },
        { spec: create(HarnessSpecSchema, { capabilities: { forkSafe: true } }), placement: tunnel },
        // Ours: a placement is required beside the spec, and the spec may not place it too.
        { spec: create(HarnessSpecSchema, { capabilities: CAPS }), placement: create(EdgePlacementSchema) },
        { spec: create(HarnessSpecSchema, { placement: { case: "remote", value: { address: "127.0.0.1:9000" } }, capabilities: CAPS }), placement: tunnel },
      ];
      for (const spec of specs) expect(await codeOf(reg(n, spec)), JSON.stringify(spec)).toBe(Code.InvalidArgument);
      expect(await codeOf(edge().registerHarness({ name: n, spec: create(HarnessSpecSchema, { capabilities: CAPS }) }))).toBe(Code.InvalidArgument);
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
        expect(await codeOf(reg(name("place"), spec)), JSON.stringify(spec)).toBe(Code.InvalidArgument);
      }
    });

    it("register: unknown fields (top level or nested) and unknown enum numbers in the spec are INVALID_ARGUMENT", async () => {
      const tunnel = tunnelSpec().placement;
      const unknownTop = { spec: withTrailingWire(tunnelSpec().spec, [0x38, 0x01]), placement: tunnel }; // field 7, varint 1
      const unknownNested = { spec: withTrailingWire(tunnelSpec().spec, [0x1a, 0x02, 0x30, 0x01]), placement: tunnel }; // capabilities{field 6: 1}
      const unknownEnum = { spec: create(HarnessSpecSchema, { capabilities: { resumability: 9 as Resumability } }), placement: tunnel };
      // In our placement too: tunnel{field 2: 1}.
      const unknownPlacement = { spec: tunnelSpec().spec, placement: fromBinary(EdgePlacementSchema, new Uint8Array([0x0a, 0x02, 0x10, 0x01])) };
      expect(unknownTop.spec.$unknown?.length, "the fixture carries an unknown field").toBe(1);
      for (const spec of [unknownTop, unknownNested, unknownEnum, unknownPlacement]) {
        expect(await codeOf(reg(name("unknown"), spec))).toBe(Code.InvalidArgument);
      }
      expect(await codeOf(client().getHarness({ name: name("unknown") }))).toBe(Code.NotFound);
    });

    it("register: a spec carrying tunnel or http_runtime the old way (fields 5, 6) is INVALID_ARGUMENT naming EdgeRegistry", async () => {
      for (const field of [
        [0x2a, 0x00], // field 5 (the old tunnel), an empty message
        [0x32, 0x00], // field 6 (the old http_runtime)
      ]) {
        const spec = withTrailingWire(create(HarnessSpecSchema, { capabilities: CAPS }), field);
        const err = await client()
          .registerHarness({ name: name("legacy"), spec })
          .then(() => undefined, ConnectError.from);
        expect(err?.code).toBe(Code.InvalidArgument);
        expect(err?.rawMessage).toMatch(/agentsessions\.edge\.v1\.EdgeRegistry\/RegisterHarness/);
      }
      expect(await codeOf(client().getHarness({ name: name("legacy") }))).toBe(Code.NotFound);
    });

    it("register: a canonical spec of 4096 bytes is accepted and 4097 is INVALID_ARGUMENT", async () => {
      const base = specDigest(tunnelSpec("", "x").spec).canonical.length;
      const at = (bytes: number) => tunnelSpec("", "x".repeat(1 + bytes - base));
      expect(specDigest(at(4096).spec).canonical.length).toBe(4096);
      expect(await codeOf(reg(name("big"), at(4097)))).toBe(Code.InvalidArgument);
      expect((await reg(name("big"), at(4096))).outcome).toBe(RegisterOutcome.CREATED);
    });

    it("register: built-in names, served here or not, are ALREADY_EXISTS", async () => {
      for (const n of ["echo", "chat", "hold", "tools"]) {
        expect(await codeOf(reg(n, tunnelSpec())), n).toBe(Code.AlreadyExists);
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
        expect(err?.rawMessage).toMatch(/agentsessions\.edge\.v1\.EdgeRegistry/);
      }
      expect(await codeOf(client().getHarness({ name: name("grpc") }))).toBe(Code.NotFound);
    });

    it("register: CREATED, then UNCHANGED; the digest is specDigest's and the spec round-trips", async () => {
      const n = name("outcomes");
      const spec = tunnelSpec("laptop", "my-agent");
      const created = await reg(n, spec);
      expect(created.outcome).toBe(RegisterOutcome.CREATED);
      const h = created.harness!;
      expect(h.specDigest).toBe(specDigest(spec.spec).digest);
      expect(h.specDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(h.metadata!.uid).toMatch(/^harness-[0-9a-f]{24}$/);
      expect(h.metadata!.createTime).toBeDefined();
      expect(h.state).toBe(HarnessState.ACTIVE);
      expect(h.source).toBe(HarnessSource.REGISTERED);
      expect(toBinary(HarnessSpecSchema, h.spec!)).toEqual(toBinary(HarnessSpecSchema, spec.spec));
      // The placement is kept beside the spec and read back through our EdgeRegistry.
      const got = await edge().getHarness({ name: n });
      expect(got.harness?.specDigest).toBe(h.specDigest);
      expect(toBinary(EdgePlacementSchema, got.placement!)).toEqual(toBinary(EdgePlacementSchema, spec.placement));
      const again = await reg(n, tunnelSpec("laptop", "my-agent"));
      expect(again.outcome).toBe(RegisterOutcome.UNCHANGED);
      expect(again.harness!.metadata!.uid).toBe(h.metadata!.uid);
      expect(again.harness!.specDigest).toBe(h.specDigest);
    });

    it("register: a different spec under a taken name is ALREADY_EXISTS, ACTIVE or RETIRED", async () => {
      const n = name("taken");
      await reg(n, tunnelSpec("a"));
      expect(await codeOf(reg(n, tunnelSpec("b")))).toBe(Code.AlreadyExists);
      expect(await codeOf(reg(n, httpSpec("https://runtime.example/")))).toBe(Code.AlreadyExists);
      await client().retireHarness({ name: n, reason: "" });
      expect(await codeOf(reg(n, tunnelSpec("b")))).toBe(Code.AlreadyExists);
      expect((await edge().getHarness({ name: n })).placement?.placement).toEqual(tunnelSpec("a").placement.placement);
    });

    it("register: the same spec on a RETIRED name is REACTIVATED, ACTIVE again with no retirement", async () => {
      const n = name("phoenix");
      const spec = httpSpec("https://runtime.example/v1");
      const created = await reg(n, spec);
      await client().retireHarness({ name: n, reason: "maintenance" });
      const back = await reg(n, spec);
      expect(back.outcome).toBe(RegisterOutcome.REACTIVATED);
      expect(back.harness!.state).toBe(HarnessState.ACTIVE);
      expect(back.harness!.metadata!.uid).toBe(created.harness!.metadata!.uid);
      expect(back.harness!.retireTime).toBeUndefined();
      expect(back.harness!.retireReason).toBe("");
      expect((await reg(n, spec)).outcome).toBe(RegisterOutcome.UNCHANGED);
    });

    it("register: spec_digest of a spec without our placements is the published vector's (§7.6)", () => {
      // Our placements sit beside the spec: they are never part of the contract's digest.
      const spec = create(HarnessSpecSchema, {
        placement: { case: "remote", value: { address: "127.0.0.1:9000" } },
        capabilities: CAPS,
        descriptorId: "echo",
      });
      expect(specDigest(spec).digest).toBe("sha256:f0c96c8b67d5dc75be557f64ccd59496eaf9cfb102754ee54e9d4c571eb2eafc");
      expect(specDigest(tunnelSpec().spec).canonical).toBe('{"capabilities":{"resumability":"RESUMABILITY_STATELESS_REPLAY"}}');
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
      await reg(n, spec);
      const h = await client().getHarness({ name: n });
      expect(h.source).toBe(HarnessSource.REGISTERED);
      expect(h.specDigest).toBe(specDigest(spec.spec).digest);
      expect(h.spec?.placement).toEqual({ case: undefined });
      expect((await edge().getHarness({ name: n })).placement?.placement).toEqual(spec.placement.placement);
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
      for (const n of mine) await reg(n, tunnelSpec(n));
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
      await Promise.all(Array.from({ length: 51 }, (_, i) => reg(name(`many-${i}`), tunnelSpec())));
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
      await reg(n, tunnelSpec());
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
      await reg(n, tunnelSpec());
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
