/**
 * Per-request values handed from the fetch entry to the RPC implementations through Connect's
 * context values: who is calling (tenant, principal) and the request id for the log line.
 */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { TenantId } from "../proto/ids.js";
import type { Principal } from "./auth/principal.js";

export interface Caller {
  /** The principal's tenant. */
  tenant: TenantId;
  requestId: string;
  /** Who is calling; worker/rpc-entry.ts serves nothing to a caller it did not authenticate. */
  principal?: Principal;
}

export const callerKey = createContextKey<Caller>({ tenant: "" as TenantId, requestId: "" }, { description: "caller" });

/** Fields the implementation adds to the request's log line (never contents). */
export interface LogFields {
  session?: string;
}

export const logFieldsKey = createContextKey<LogFields | undefined>(undefined, { description: "log fields" });

export function callerOf(ctx: HandlerContext): Caller {
  return ctx.values.get(callerKey);
}

/** The authenticated principal; worker/rpc-entry.ts guarantees there is one. */
export function principalOf(ctx: HandlerContext): Principal {
  const p = ctx.values.get(callerKey).principal;
  if (!p) throw new Error("no authenticated principal: the request did not come through rpc-entry.ts");
  return p;
}

/** Whether the caller speaks a binary encoding (Connect or gRPC-Web protobuf), not JSON. */
export function wantsBinary(ctx: HandlerContext): boolean {
  return !(ctx.requestHeader.get("content-type") ?? "").includes("json");
}

export function noteSession(ctx: HandlerContext, uid: string): void {
  const f = ctx.values.get(logFieldsKey);
  if (f && !f.session) f.session = uid;
}
