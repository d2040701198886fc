/**
 * SessionObject: the Durable Object that is the single writer of one session's journal.
 *
 * Thin on purpose (STYLE 14): the constructor wires SQLite storage, the clock and the Directory;
 * each RPC method decodes its arguments and delegates to SessionHost (objects/session/).
 * Results cross the RPC boundary as data (outcomes and protobuf bytes), never as thrown errors.
 */
import { DurableObject } from "cloudflare:workers";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ExecRequestSchema, SessionSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import type { ChainReport } from "../proto/verify.js";
import { createModelInvoker } from "./controller/models.js";
import { directoryStub, type Env } from "./env.js";
import type { StoredRecord } from "./journal/journal.js";
import type { Outcome } from "./session/outcomes.js";
import { SessionHost, type ExecStart } from "./session/session-host.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";

export class SessionObject extends DurableObject<Env> {
  private readonly _host: SessionHost;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this._host = new SessionHost({
      db: sqlDbFromStorage(ctx.storage),
      now: () => Date.now(),
      models: createModelInvoker(),
      directory: async (tenant, row) => {
        await directoryStub(env, tenant).upsert(row);
      },
    });
  }

  async create(tenant: string, uid: string, statics: Uint8Array): Promise<Outcome<Uint8Array>> {
    const r = await this._host.create({ tenant, uid, statics: fromBinary(SessionSchema, statics) });
    return r.ok ? { ok: true, value: toBinary(SessionSchema, r.value) } : r;
  }

  get(): Outcome<Uint8Array> {
    const r = this._host.get();
    return r.ok ? { ok: true, value: toBinary(SessionSchema, r.value) } : r;
  }

  exec(request: Uint8Array): ExecStart {
    return this._host.exec(fromBinary(ExecRequestSchema, request));
  }

  read(from: bigint, to: bigint, limit: number): Outcome<StoredRecord[]> {
    return this._host.read(from, to, limit);
  }

  verify(): Outcome<ChainReport> {
    return this._host.verify();
  }
}
