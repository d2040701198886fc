/**
 * SessionObject: the Durable Object that is the single writer of one session's journal.
 *
 * Thin on purpose (STYLE 14): the constructor wires SQLite storage, the clock, the configured
 * harnesses and model provider, and the Directory; each RPC method decodes its arguments and
 * delegates to SessionHost (objects/session/). Results cross the RPC boundary as data (outcomes
 * and protobuf bytes), never as thrown errors.
 */
import { DurableObject } from "cloudflare:workers";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ExecRequestSchema, SessionSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { builtinHarnesses } from "../runtimes/builtin/index.js";
import { hostConfig } from "./config.js";
import { createModelInvoker } from "./controller/models.js";
import { directoryStub, type Env } from "./env.js";
import type { StoredRecord } from "./journal/journal.js";
import { createOpenAiChatProvider } from "./models/openai-chat.js";
import type { Outcome } from "./session/outcomes.js";
import { SessionHost, type AuditReport, type ExecStart } from "./session/session-host.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";

export class SessionObject extends DurableObject<Env> {
  private readonly _host: SessionHost;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const config = hostConfig(env);
    const provider = config.model && createOpenAiChatProvider(config.model);
    this._host = new SessionHost({
      db: sqlDbFromStorage(ctx.storage),
      now: () => Date.now(),
      models: (sessionModel) => createModelInvoker({ sessionModel, defaultModel: config.defaultModel, provider }),
      harnesses: builtinHarnesses({ chat: provider !== undefined, chatModels: config.defaultModel ? [config.defaultModel] : [], testing: config.testHarnesses }),
      directory: async (tenant, row) => {
        await directoryStub(env, tenant).upsert(row);
      },
    });
  }

  async create(tenant: string, uid: string, statics: Uint8Array): Promise<Outcome<Uint8Array>> {
    return sessionBytes(await this._host.create({ tenant, uid, statics: fromBinary(SessionSchema, statics) }));
  }

  get(): Outcome<Uint8Array> {
    return sessionBytes(this._host.get());
  }

  exec(request: Uint8Array): ExecStart {
    return this._host.exec(fromBinary(ExecRequestSchema, request));
  }

  async resume(): Promise<Outcome<Uint8Array>> {
    return sessionBytes(await this._host.resume());
  }

  read(from: bigint, to: bigint, limit: number): Outcome<StoredRecord[]> {
    return this._host.read(from, to, limit);
  }

  audit(replay: boolean, anchor?: { seq: number; hash: string }): Promise<Outcome<AuditReport>> {
    return this._host.audit(replay, anchor);
  }
}

function sessionBytes(r: Outcome<import("../proto/gen/agentsessions/v1/session_pb.js").Session>): Outcome<Uint8Array> {
  return r.ok ? { ok: true, value: toBinary(SessionSchema, r.value) } : r;
}
