/**
 * The HarnessRegistry service (docs/contract.md §2.3, §4.4, §8; docs/behaviour.md §6.4) as the Worker serves
 * it: validate the name and spec, compute spec_digest (§7.6), refuse what this host cannot serve,
 * and keep the registrations in the caller's tenant Directory (objects/directory/registry-store.ts).
 *
 * Static harnesses are the built-in ones (runtimes/builtin): every built-in name is reserved, the
 * ones this deployment serves are listed as STATIC. Registered ones are immutable and
 * content-addressed: a name is bound to one spec digest (and one placement) forever.
 *
 * The placements this host serves (tunnel, http_runtime) are not the contract's: they are
 * registered through our EdgeRegistry (proto/agentsessions/edge/v1/placement.proto), beside a spec
 * whose own placement is unset, and the contract's HarnessRegistry reads, lists and retires those
 * registrations like any other. Both services share one core here. Routed by worker/router.ts;
 * tested end to end in test/node/integration/registry.test.ts and in process in
 * test/node/registry/registry-service.test.ts.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { decodeBinary } from "../proto/binary-reader.js";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  HarnessRegistrationSchema,
  type HarnessRegistry,
  HarnessSource,
  HarnessSpecSchema,
  HarnessState,
  RegisterOutcome,
  type HarnessRegistration,
  type HarnessSpec,
} from "../proto/gen/agentsessions/v1/harness_registry_pb.js";
import {
  EdgePlacementSchema,
  EdgeRegistrationSchema,
  type EdgePlacement,
  type EdgeRegistration,
  type EdgeRegistry,
} from "../proto/gen/agentsessions/edge/v1/placement_pb.js";
import type { HarnessDescriptor } from "../proto/gen/agentsessions/v1/harness_pb.js";
import { specDigest } from "../proto/canon.js";
import { isHarnessName } from "../proto/harness-name.js";
import { BUILTIN_NAMES, servedBuiltins, type HarnessResolver } from "../runtimes/builtin/index.js";
import { hostConfig, type ConfigEnv } from "../objects/config.js";
// Types only, and no objects/index.js: this module also runs in process in Node tests
// (test/node/registry/registry-service.test.ts), where the Durable Object classes cannot load.
import type { HarnessRecord, RegisterOutcome as StoredOutcome, RegisterResult, RetireResult } from "../objects/directory/registry-store.js";
// Plain TypeScript over the generated protos, so it loads in Node too.
import { LEGACY_PLACEMENT_FIELDS } from "../objects/directory/placement-migration.js";
import type { TenantId } from "../proto/ids.js";
import { callerOf } from "./context.js";
import { internalError } from "./errors.js";

/** docs/contract.md §7.6: the canonical spec may not exceed this many bytes (nor our binary placement beside it). */
export const MAX_CANONICAL_SPEC_BYTES = 4096;
/** docs/contract.md §4.4 RetireHarnessRequest.reason. */
export const MAX_RETIRE_REASON_BYTES = 1024;
export const DEFAULT_HARNESS_PAGE = 50;
export const MAX_HARNESS_PAGE = 500;

/** Where the placements this host serves are registered (proto/agentsessions/edge/v1/placement.proto). */
const EDGE_REGISTER = "agentsessions.edge.v1.EdgeRegistry/RegisterHarness";

/** What GetHarness says when `observe` is asked of a registered harness (live describe lands with the tunnel). */
export const OBSERVE_UNAVAILABLE = "live describe is not available here yet";

export { isHarnessName };

/** The registry methods of a tenant's Directory object (objects/directory/object.ts), as its stub answers them. */
export interface RegistryDirectory {
  registerHarness(name: string, spec: Uint8Array, specDigest: string, placement?: Uint8Array): Promise<RegisterResult>;
  getHarness(name: string): Promise<HarnessRecord | undefined>;
  listHarnesses(after: string, limit: number, includeRetired: boolean): Promise<HarnessRecord[]>;
  retireHarness(name: string, reason: string): Promise<RetireResult>;
}

export interface RegistryServiceOptions {
  /** The built-ins this deployment serves (listed as STATIC). */
  served?: HarnessResolver;
  /** Names nobody may register: every built-in, served here or not. */
  reserved?: readonly string[];
  /** A live Describe of a registered harness (GetHarness observe); never fails the call. */
  observe?: (tenant: TenantId, name: string, placement: EdgePlacement | undefined) => Promise<{ descriptor?: HarnessDescriptor; error?: string }>;
}

/** The rules both registry services share: validation, the stored rows, static harnesses. */
interface RegistryCore {
  register(
    name: string,
    spec: HarnessSpec | undefined,
    placement: EdgePlacement | undefined,
    ctx: HandlerContext,
  ): Promise<{ harness: EdgeRegistration; outcome: RegisterOutcome }>;
  get(name: string, observe: boolean, ctx: HandlerContext): Promise<EdgeRegistration>;
  stored<T>(call: (d: RegistryDirectory) => Promise<T>, ctx: HandlerContext): Promise<T>;
  served: HarnessResolver;
  reserved: ReadonlySet<string>;
}

/**
 * `directoryOf` is the caller's tenant Directory: worker/router.ts passes its Durable Object stub.
 * `env` decides which built-ins are served (chat needs a model provider; the test-only ones a flag).
 */
export function createRegistryService(
  env: ConfigEnv,
  directoryOf: (tenant: TenantId) => RegistryDirectory,
  opts: RegistryServiceOptions = {},
): ServiceImpl<typeof HarnessRegistry> {
  const core = createRegistryCore(env, directoryOf, opts);
  const { served, reserved, stored } = core;
  return {
    async registerHarness(req, ctx) {
      const r = await core.register(req.name, req.spec, undefined, ctx);
      return { harness: r.harness.harness, outcome: r.outcome };
    },

    async getHarness(req, ctx) {
      return (await core.get(req.name, req.observe, ctx)).harness!;
    },

    async listHarnesses(req, ctx) {
      // §8 ListHarnesses: page_size < 0 or bad token → INVALID_ARGUMENT.
      if (req.pageSize < 0) throw new ConnectError(`page_size ${req.pageSize} is negative`, Code.InvalidArgument);
      const size = req.pageSize === 0 ? DEFAULT_HARNESS_PAGE : Math.min(req.pageSize, MAX_HARNESS_PAGE);
      let after = "";
      if (req.pageToken !== "") {
        const name = nameFromPageToken(req.pageToken);
        if (name === undefined) {
          throw new ConnectError("page_token is not a token this server issued: start again with an empty page_token", Code.InvalidArgument);
        }
        after = name;
      }
      // Keyset over name: statics and registered rows merged in name order (docs/behaviour.md §6.4).
      const statics = served.names().filter((n) => n > after);
      const registered = (await stored((d) => d.listHarnesses(after, size + 1, req.includeRetired), ctx)).filter((r) => !served.get(r.name));
      const merged = [...statics.map(staticRegistration), ...registered.map(registrationFromRecord)].sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : 1));
      const page = merged.slice(0, size);
      const nextPageToken = merged.length > size ? pageTokenFromName(nameOf(page[page.length - 1]!)) : "";
      return { harnesses: page, nextPageToken };
    },

    async retireHarness(req, ctx) {
      // §8 RetireHarness: empty name or long reason → INVALID_ARGUMENT; static → FAILED_PRECONDITION;
      // unknown → NOT_FOUND; retiring a RETIRED harness → OK unchanged.
      if (req.name === "") throw new ConnectError("name is required", Code.InvalidArgument);
      const reasonBytes = new TextEncoder().encode(req.reason).length;
      if (reasonBytes > MAX_RETIRE_REASON_BYTES) {
        throw new ConnectError(`reason is ${reasonBytes} bytes, over the limit of ${MAX_RETIRE_REASON_BYTES}`, Code.InvalidArgument);
      }
      if (reserved.has(req.name) || served.get(req.name)) {
        throw new ConnectError(`"${req.name}" is a built-in (STATIC) harness: it cannot be retired`, Code.FailedPrecondition);
      }
      const r = isHarnessName(req.name) ? await stored((d) => d.retireHarness(req.name, req.reason), ctx) : undefined;
      if (!r?.ok) throw notFound(req.name);
      return registrationFromRecord(r.record);
    },
  };
}

/** Our EdgeRegistry: registration of the tunnel and http_runtime placements, and reading them back. */
export function createEdgeRegistryService(
  env: ConfigEnv,
  directoryOf: (tenant: TenantId) => RegistryDirectory,
  opts: RegistryServiceOptions = {},
): ServiceImpl<typeof EdgeRegistry> {
  const core = createRegistryCore(env, directoryOf, opts);
  return {
    async registerHarness(req, ctx) {
      if (!req.placement?.placement.case) {
        throw new ConnectError(
          "placement is required here (tunnel or http_runtime); register remote and substrate specs through agentsessions.v1.HarnessRegistry",
          Code.InvalidArgument,
        );
      }
      return core.register(req.name, req.spec, req.placement, ctx);
    },
    async getHarness(req, ctx) {
      return core.get(req.name, req.observe, ctx);
    },
  };
}

function createRegistryCore(env: ConfigEnv, directoryOf: (tenant: TenantId) => RegistryDirectory, opts: RegistryServiceOptions): RegistryCore {
  const config = hostConfig(env);
  const served = opts.served ?? servedBuiltins(config);
  const reserved = new Set(opts.reserved ?? BUILTIN_NAMES);
  // §8 "else INTERNAL": a storage or RPC failure says only "internal error" on the wire.
  const stored = async <T>(call: (d: RegistryDirectory) => Promise<T>, ctx: HandlerContext): Promise<T> => {
    try {
      return await call(directoryOf(callerOf(ctx).tenant));
    } catch (e) {
      throw internalError(e);
    }
  };

  return {
    served,
    reserved,
    stored,

    async register(name, spec, placement, ctx) {
      // §8 RegisterHarness: every INVALID_ARGUMENT first, then ALREADY_EXISTS (reserved name),
      // FAILED_PRECONDITION (placement), and last what the stored row says.
      if (!isHarnessName(name)) throw invalidName(name);
      if (!spec) throw new ConnectError("spec is required", Code.InvalidArgument);
      const invalid = specProblem(spec, placement);
      if (invalid) throw new ConnectError(invalid, Code.InvalidArgument);
      const { digest, canonical } = specDigest(spec);
      const size = new TextEncoder().encode(canonical).length;
      if (size > MAX_CANONICAL_SPEC_BYTES) {
        throw new ConnectError(`canonical spec is ${size} bytes, over the limit of ${MAX_CANONICAL_SPEC_BYTES}`, Code.InvalidArgument);
      }
      const placed = placement && toBinary(EdgePlacementSchema, placement);
      if (placed && placed.length > MAX_CANONICAL_SPEC_BYTES) {
        throw new ConnectError(`placement is ${placed.length} bytes, over the limit of ${MAX_CANONICAL_SPEC_BYTES}`, Code.InvalidArgument);
      }
      if (reserved.has(name)) {
        throw new ConnectError(`"${name}" is a built-in harness name and cannot be registered`, Code.AlreadyExists);
      }
      const inSpec = spec.placement.case;
      if (inSpec === "remote" || inSpec === "substrate") {
        throw new ConnectError(
          `this host cannot serve ${inSpec} placements (a Worker cannot dial gRPC harnesses or run substrate actors); ` +
            `it serves tunnel and http_runtime placements, registered through ${EDGE_REGISTER}` +
            (inSpec === "substrate" ? ": for agent-substrate, register an http_runtime placement whose url is a substrate bridge (docs/runtimes.md)" : ""),
          Code.FailedPrecondition,
        );
      }
      const r = await stored((d) => d.registerHarness(name, toBinary(HarnessSpecSchema, spec), digest, placed), ctx);
      if (!r.ok) {
        // §8 RegisterHarness "different spec under the name → ALREADY_EXISTS"
        throw new ConnectError(
          `harness "${name}" is already registered with a different spec or placement (${r.record.specDigest}); registrations are immutable: use a new name`,
          Code.AlreadyExists,
        );
      }
      return { harness: edgeRegistrationFromRecord(r.record), outcome: OUTCOMES[r.outcome] };
    },

    async get(name, observe, ctx) {
      // §8 GetHarness: empty name → INVALID_ARGUMENT; unknown → NOT_FOUND.
      if (name === "") throw new ConnectError("name is required", Code.InvalidArgument);
      const builtin = served.get(name);
      if (builtin) {
        const reg = staticRegistration(name);
        if (observe) {
          try {
            reg.observed = await builtin.describe();
          } catch (e) {
            reg.observeError = e instanceof Error ? e.message : String(e);
          }
        }
        return create(EdgeRegistrationSchema, { harness: reg });
      }
      const record = isHarnessName(name) ? await stored((d) => d.getHarness(name), ctx) : undefined;
      if (!record) throw notFound(name);
      const edge = edgeRegistrationFromRecord(record);
      const reg = edge.harness!;
      if (observe) {
        if (!opts.observe) reg.observeError = OBSERVE_UNAVAILABLE;
        else {
          const seen = await opts
            .observe(callerOf(ctx).tenant, name, edge.placement)
            .catch((e: unknown) => ({ error: e instanceof Error ? e.message : "error" }));
          if ("descriptor" in seen && seen.descriptor) reg.observed = seen.descriptor;
          else reg.observeError = seen.error ?? "no answer";
        }
      }
      return edge;
    },
  };
}

const OUTCOMES: Record<StoredOutcome, RegisterOutcome> = {
  created: RegisterOutcome.CREATED,
  unchanged: RegisterOutcome.UNCHANGED,
  reactivated: RegisterOutcome.REACTIVATED,
};

/**
 * Why `spec` (with `placement`, our placement beside it, when registered through EdgeRegistry) is
 * not a valid registration (INVALID_ARGUMENT), or undefined. Unknown fields and unknown enum
 * numbers are refused anywhere in either: they would be dropped from the canonical JSON, so two
 * different wire specs could share a digest.
 */
export function specProblem(spec: HarnessSpec, placement?: EdgePlacement): string | undefined {
  const moved = spec.$unknown?.find((u) => LEGACY_PLACEMENT_FIELDS.has(u.no));
  if (moved) {
    return (
      `spec has field ${moved.no} (${LEGACY_PLACEMENT_FIELDS.get(moved.no)!.name}), which is not the contract's: ` +
      `register tunnel and http_runtime placements through ${EDGE_REGISTER}, with the placement beside the spec (docs/tunnel.md)`
    );
  }
  const unknown = unknownContent(reflect(HarnessSpecSchema, spec), "spec");
  if (unknown) return unknown;
  if (placement) {
    if (spec.placement.case !== undefined) return `spec.${spec.placement.case} must be unset: the placement goes beside the spec, in placement`;
    const unknownPlacement = unknownContent(reflect(EdgePlacementSchema, placement), "placement");
    if (unknownPlacement) return unknownPlacement;
    const p = placement.placement;
    if (p.case === "httpRuntime") {
      const bad = httpUrlProblem(p.value.url);
      if (bad) return `placement.http_runtime.url ${bad}`;
    }
  } else {
    const p = spec.placement;
    switch (p.case) {
      case undefined:
        return `spec needs exactly one placement: remote or substrate (tunnel and http_runtime are registered through ${EDGE_REGISTER})`;
      case "remote":
        if (p.value.address === "") return "spec.remote.address is required";
        break;
      case "substrate":
        if (p.value.atespace === "" || p.value.template === "") return "spec.substrate needs both atespace and template";
        break;
    }
  }
  if (!spec.capabilities) return "spec.capabilities is required (with resumability)";
  if (spec.capabilities.resumability === 0) return "spec.capabilities.resumability must be set (STATELESS_REPLAY or REQUIRES_MEMORY_SNAPSHOT)";
  return undefined;
}

function httpUrlProblem(s: string): string | undefined {
  if (s === "") return "is required";
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return "is not a URL";
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return "must be an http:// or https:// URL";
  // Specs are listed to every admin caller: a credential in the URL would be published.
  if (u.username !== "" || u.password !== "") return "must not carry credentials";
  return undefined;
}

function unknownContent(m: ReflectMessage, path: string): string | undefined {
  const unknown = m.getUnknown();
  if (unknown?.length) return `${path} has unknown field ${unknown[0]!.no}: this host does not know it`;
  for (const f of m.fields) {
    if (!m.isSet(f)) continue;
    const at = `${path}.${f.name}`;
    if (f.fieldKind === "message") {
      const inner = unknownContent(m.get(f), at);
      if (inner) return inner;
    } else if (f.fieldKind === "enum") {
      const bad = unknownEnum(f.enum.values, m.get(f), at);
      if (bad) return bad;
    } else if (f.fieldKind === "list") {
      for (const v of m.get(f)) {
        const bad =
          f.listKind === "message" ? unknownContent(v as ReflectMessage, at) : f.listKind === "enum" ? unknownEnum(f.enum.values, v as number, at) : undefined;
        if (bad) return bad;
      }
    } else if (f.fieldKind === "map") {
      for (const v of m.get(f).values()) {
        const bad =
          f.mapKind === "message" ? unknownContent(v as ReflectMessage, at) : f.mapKind === "enum" ? unknownEnum(f.enum.values, v as number, at) : undefined;
        if (bad) return bad;
      }
    }
  }
  return undefined;
}

function unknownEnum(values: readonly { number: number }[], n: number, at: string): string | undefined {
  return values.some((v) => v.number === n) ? undefined : `${at} has unknown enum number ${n}`;
}

/** The wire registration of a stored row. A spec that no longer decodes is left unset (§4.4). */
export function registrationFromRecord(r: HarnessRecord): HarnessRegistration {
  let spec: HarnessSpec | undefined;
  try {
    spec = decodeBinary(HarnessSpecSchema, r.spec);
  } catch {
    spec = undefined;
  }
  return create(HarnessRegistrationSchema, {
    metadata: {
      name: r.name,
      uid: r.uid,
      version: BigInt(r.version),
      createTime: timestampFromMs(r.createMs),
      updateTime: timestampFromMs(r.updateMs),
    },
    spec,
    specDigest: r.specDigest,
    state: r.state === "active" ? HarnessState.ACTIVE : HarnessState.RETIRED,
    source: HarnessSource.REGISTERED,
    retireTime: r.retireMs === undefined ? undefined : timestampFromMs(r.retireMs),
    retireReason: r.retireReason ?? "",
  });
}

/** The registration with the placement stored beside its spec (unset when the spec places it). */
export function edgeRegistrationFromRecord(r: HarnessRecord): EdgeRegistration {
  let placement: EdgePlacement | undefined;
  try {
    placement = r.placement ? decodeBinary(EdgePlacementSchema, r.placement) : undefined;
  } catch {
    placement = undefined;
  }
  return create(EdgeRegistrationSchema, { harness: registrationFromRecord(r), placement });
}

/** A built-in harness: never stored, always ACTIVE, no spec and no digest (§3.9). */
function staticRegistration(name: string): HarnessRegistration {
  return create(HarnessRegistrationSchema, { metadata: { name }, state: HarnessState.ACTIVE, source: HarnessSource.STATIC });
}

const nameOf = (r: HarnessRegistration) => r.metadata?.name ?? "";

/** Opaque to clients; as the reference: unpadded base64url of the last name returned. */
export function pageTokenFromName(name: string): string {
  return btoa(name).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function nameFromPageToken(token: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let name: string;
  try {
    name = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return undefined;
  }
  return isHarnessName(name) ? name : undefined;
}

function invalidName(name: string): ConnectError {
  return new ConnectError(
    `name ${JSON.stringify(name.slice(0, 80))} is not a DNS label: at most 63 lowercase letters, digits and '-', not starting or ending with '-'`,
    Code.InvalidArgument,
  );
}

function notFound(name: string): ConnectError {
  return new ConnectError(`harness ${JSON.stringify(name.slice(0, 80))} is not registered`, Code.NotFound);
}
