/**
 * TenantLimiter: one Durable Object per tenant that admits requests (rate) and executions
 * (concurrency). Thin: the logic and its SQL are in limits/tenant-limits.ts; this class adds the
 * clock and the way to ask a session object whether a turn it once counted still runs.
 */
import { DurableObject } from "cloudflare:workers";
import { type Env, sessionStub } from "../env.js";
import { type Admission, type LeaseOutcome, type LimitSettings, TenantLimits } from "./tenant-limits.js";
import { sqlDbFromStorage } from "../storage/do-sql.js";
import { configureLogLevel } from "../log-line.js";

export class TenantLimiter extends DurableObject<Env> {
  private readonly _limits: TenantLimits;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    configureLogLevel(env);
    this._limits = new TenantLimits(sqlDbFromStorage(ctx.storage));
  }

  /** Takes up to `want` of the tenant's request tokens (worker/rate-tokens.ts). */
  admit(s: LimitSettings, want = 1): Admission {
    return this._limits.admit(s, Date.now(), want);
  }

  /** Counts `session` of `tenant` as running a turn of `owner` (a session object's instance and turn). */
  acquire(s: LimitSettings, tenant: string, session: string, owner: string): Promise<LeaseOutcome> {
    return this._limits.acquire(s, session, owner, Date.now(), (uid, o) => sessionStub(this.env, tenant, uid).runs(o));
  }

  release(session: string, owner: string): void {
    this._limits.release(session, owner);
  }

  /** `session` keeps `owner`'s row after its turn, for its next turn (tenant-limits.ts). */
  keep(session: string, owner: string): void {
    this._limits.keep(session, owner, Date.now());
  }
}
