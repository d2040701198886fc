/**
 * Limits and quotas at the Worker's edge (docs/security.md): each is checked before anything is
 * written and answered with a Connect error that says which limit and what to do. The request
 * size limit is the router's readMaxBytes; per-event bytes are the journal's (objects/journal).
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { hostLimits, type HostLimits } from "../objects/config.js";
import { limiterStub, type Env, type LimitSettings } from "../objects/index.js";
import { RateTokens, RESERVE_LIFE_MS } from "./rate-tokens.js";

export interface LimitGuards {
  readonly limits: HostLimits;
  /**
   * Spends one of the tenant's request tokens, taken from its limiter a few at a time
   * (worker/rate-tokens.ts); the refusal's message when it is over its rate. `waitUntil` (the
   * request's ctx.waitUntil) keeps a limiter call made beside the request going after it ends.
   */
  admitRate(tenant: string, waitUntil?: (p: Promise<unknown>) => void): Promise<string | undefined>;
}

export function createLimitGuards(env: Env): LimitGuards {
  const limits = hostLimits(env);
  const settings: LimitSettings = { ratePerSecond: limits.ratePerSecond, burst: limits.rateBurst, maxConcurrent: limits.maxConcurrentExecs };
  const tokens = new RateTokens((tenant, want) => limiterStub(env, tenant).admit(settings, want), settings.ratePerSecond, Date.now, {
    reserveLifeMs: RESERVE_LIFE_MS,
  });
  return {
    limits,
    async admitRate(tenant, waitUntil) {
      if (settings.ratePerSecond <= 0) return undefined;
      const retryAfterMs = await tokens.admit(tenant, waitUntil);
      if (retryAfterMs === undefined) return undefined;
      return `tenant ${tenant} is over its rate limit of ${settings.ratePerSecond} requests per second: retry in ${Math.max(1, Math.ceil(retryAfterMs / 1000))} s`;
    },
  };
}

/** Refuses a request whose google.protobuf.Struct/Value/ListValue values nest deeper than `max`. */
export function checkStructDepth<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>, max: number, what: string): void {
  if (structDepth(schema, message, max + 1) > max) {
    throw new ConnectError(`${what} nests JSON values (google.protobuf.Struct) more than ${max} levels deep: flatten them`, Code.InvalidArgument);
  }
}

const JSON_TYPES = new Set(["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"]);

/**
 * The deepest nesting of any Struct/Value/ListValue field in a decoded message, walked with its
 * schema and without recursion (the message may be hostile); stops once `stopAt` is reached.
 */
export function structDepth(schema: DescMessage, message: object, stopAt: number): number {
  let deepest = 0;
  const messages: [DescMessage, Record<string, unknown>][] = [[schema, message as Record<string, unknown>]];
  const visit = (desc: DescMessage, v: unknown) => {
    if (v === undefined || v === null) return;
    if (JSON_TYPES.has(desc.typeName)) deepest = Math.max(deepest, jsonDepth(v, stopAt));
    else messages.push([desc, v as Record<string, unknown>]);
  };
  while (messages.length > 0 && deepest < stopAt) {
    const [desc, msg] = messages.pop()!;
    for (const f of desc.fields) {
      const v = f.oneof ? oneofValue(msg[f.oneof.localName], f.localName) : msg[f.localName];
      if (f.fieldKind === "message") visit(f.message, v);
      else if (f.fieldKind === "list" && f.listKind === "message") for (const e of (v as unknown[]) ?? []) visit(f.message, e);
      else if (f.fieldKind === "map" && f.mapKind === "message") for (const e of Object.values((v as object) ?? {})) visit(f.message, e);
    }
  }
  return deepest;
}

function oneofValue(o: unknown, name: string): unknown {
  const sel = o as { case?: string; value?: unknown } | undefined;
  return sel?.case === name ? sel.value : undefined;
}

/** Levels of objects and arrays in a JSON value, counted iteratively, up to `stopAt`. */
function jsonDepth(value: unknown, stopAt: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (d + 1 > deepest) deepest = d + 1;
    if (deepest >= stopAt) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}
