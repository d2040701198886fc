/**
 * Per-request values handed from the fetch entry to the RPC implementations through Connect's
 * context values: who is calling (tenant, principal) and the request id for the log line.
 */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { DEFAULT_TENANT, type TenantId } from "../proto/ids.js";

export interface Caller {
  tenant: TenantId;
  requestId: string;
}

export const callerKey = createContextKey<Caller>({ tenant: DEFAULT_TENANT, requestId: "" }, { description: "caller" });

/** Fields the implementation adds to the request's log line (never contents). */
export interface LogFields {
  session?: string;
}

export const logFieldsKey = createContextKey<LogFields | undefined>(undefined, { description: "log fields" });

export function callerOf(ctx: HandlerContext): Caller {
  return ctx.values.get(callerKey);
}

export function noteSession(ctx: HandlerContext, uid: string): void {
  const f = ctx.values.get(logFieldsKey);
  if (f && !f.session) f.session = uid;
}
