/**
 * TenantLimiter: one Durable Object per tenant that admits requests (rate) and executions
 * (concurrency). Thin: the logic and its SQL are in limits/tenant-limits.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "./env.js";
import { TenantLimits, type Admission, type LeaseOutcome, type LimitSettings } from "./limits/tenant-limits.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";

export class TenantLimiter extends DurableObject<Env> {
  private readonly _limits: TenantLimits;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this._limits = new TenantLimits(sqlDbFromStorage(ctx.storage));
  }

  admit(s: LimitSettings): Admission {
    return this._limits.admit(s, Date.now());
  }

  acquire(s: LimitSettings, session: string, owner: string): LeaseOutcome {
    return this._limits.acquire(s, session, owner, Date.now());
  }

  release(session: string, owner: string): void {
    this._limits.release(session, owner);
  }
}
