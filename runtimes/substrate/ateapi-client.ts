/**
 * The bridge's client of agent-substrate's control API: real gRPC (HTTP/2 with trailers) through
 * connect-node's gRPC transport, scoped to one atespace, with the pinned G3 subset
 * (proto/ateapi/control.proto). Absence is data (`undefined`, `false`), never an error; every
 * other failure is classified once here (substrate-error.ts) and names the address, the method and
 * the actor or tag. Calls a concurrent operation bounced with ABORTED (another holder of the
 * actor's lease, e.g. the router waking it) are retried a few times when the call is idempotent.
 *
 * Authentication (docs/runtimes.md "The substrate bridge"): a bearer token read from a file on
 * every call, so a rotated projected ServiceAccount token is picked up, and the cluster's CA for
 * the server certificate. `http://` dials cleartext HTTP/2 (prior knowledge), for tests.
 * @internal Used by actors.ts and memory-fork.ts; tested against the stand-in in test/node/substrate/.
 */
import { readFileSync } from "node:fs";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { Control, type Actor, type Tag } from "../../proto/gen/ateapi/control_pb.js";
import {
  createActorRequest,
  createTagRequest,
  deleteActorRequest,
  deleteTagRequest,
  getActorRequest,
  getTagRequest,
  resumeActorRequest,
  suspendActorRequest,
  type Ref,
} from "./ateapi-requests.js";
import { ateapiError } from "./substrate-error.js";

export interface AteapiClientOptions {
  /** e.g. https://api.ate-system.svc:443, or http://127.0.0.1:7443 for cleartext HTTP/2. */
  url: string;
  /** Every actor and tag of this bridge lives here. */
  atespace: string;
  /** A file holding the bearer token (re-read on every call). */
  tokenFile?: string;
  /** PEM of the CA that signed ateapi's server certificate (in-cluster, not a public CA). */
  ca?: string;
  /** Per call; ResumeActor waits for the actor's wakeup probes. Default 120 s. */
  timeoutMs?: number;
  /** Tries of an idempotent call refused ABORTED (default 3), `retryDelayMs` apart (default 250, doubling). */
  abortedAttempts?: number;
  retryDelayMs?: number;
}

export interface AteapiClient {
  /** The URL for messages (no credentials). */
  readonly address: string;
  readonly atespace: string;
  getActor(name: string): Promise<Actor | undefined>;
  createActor(name: string, template: Ref, sourceTag?: string): Promise<Actor>;
  resumeActor(name: string): Promise<{ actor: Actor; resumed: boolean }>;
  suspendActor(name: string): Promise<Actor>;
  /** False when there was no such actor. */
  deleteActor(name: string, anyState: boolean): Promise<boolean>;
  createTag(name: string, sourceActor: string): Promise<Tag>;
  getTag(name: string): Promise<Tag | undefined>;
  /** False when there was no such tag. */
  deleteTag(name: string): Promise<boolean>;
  /** Closes the HTTP/2 connection. */
  close(): void;
}

export function createAteapiClient(o: AteapiClientOptions): AteapiClient {
  const address = displayUrl(o.url);
  const sessions = new Http2SessionManager(o.url, { pingIntervalMs: 30_000, idleConnectionTimeoutMs: 5 * 60_000 }, o.ca ? { ca: o.ca } : {});
  const client: Client<typeof Control> = createClient(
    Control,
    createGrpcTransport({
      baseUrl: o.url,
      sessionManager: sessions,
      interceptors: o.tokenFile ? [bearerFromFile(o.tokenFile)] : [],
      defaultTimeoutMs: o.timeoutMs ?? 120_000,
    }),
  );
  const attempts = o.abortedAttempts ?? 3;
  const delay = o.retryDelayMs ?? 250;
  const as = o.atespace;
  const actorRef = (name: string): Ref => ({ atespace: as, name });

  /** One call; `idempotent` calls are retried on ABORTED. */
  const call = async <T>(step: string, subject: string, rpc: () => Promise<T>, idempotent: boolean): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await rpc();
      } catch (e) {
        const err = ConnectError.from(e);
        if (idempotent && err.code === Code.Aborted && attempt < attempts) {
          await new Promise((r) => setTimeout(r, delay * 2 ** (attempt - 1)));
          continue;
        }
        throw ateapiError(address, step, `${as}/${subject}`, err);
      }
    }
  };
  /** NOT_FOUND as `undefined`. */
  const orAbsent = async <T>(p: Promise<T>): Promise<T | undefined> => {
    try {
      return await p;
    } catch (e) {
      if (e instanceof ConnectError && e.code === Code.NotFound) return undefined;
      throw e;
    }
  };

  return {
    address,
    atespace: as,
    getActor: (name) => orAbsent(call("GetActor", name, () => client.getActor(getActorRequest(actorRef(name))), true)),
    createActor: (name, template, sourceTag) =>
      call("CreateActor", name, () => client.createActor(createActorRequest(actorRef(name), template, sourceTag ? actorRef(sourceTag) : undefined)), false),
    async resumeActor(name) {
      const r = await call("ResumeActor", name, () => client.resumeActor(resumeActorRequest(actorRef(name))), true);
      if (!r.actor) throw ateapiError(address, "ResumeActor", `${as}/${name}`, new ConnectError("answered without the actor", Code.Internal));
      return { actor: r.actor, resumed: r.resumed };
    },
    async suspendActor(name) {
      const r = await call("SuspendActor", name, () => client.suspendActor(suspendActorRequest(actorRef(name))), true);
      if (!r.actor) throw ateapiError(address, "SuspendActor", `${as}/${name}`, new ConnectError("answered without the actor", Code.Internal));
      return r.actor;
    },
    deleteActor: async (name, anyState) =>
      (await orAbsent(call("DeleteActor", name, () => client.deleteActor(deleteActorRequest(actorRef(name), anyState)), true))) !== undefined,
    createTag: (name, sourceActor) => call("CreateTag", name, () => client.createTag(createTagRequest(actorRef(name), actorRef(sourceActor))), false),
    getTag: (name) => orAbsent(call("GetTag", name, () => client.getTag(getTagRequest(actorRef(name))), true)),
    deleteTag: async (name) => (await orAbsent(call("DeleteTag", name, () => client.deleteTag(deleteTagRequest(actorRef(name))), true))) !== undefined,
    close: () => sessions.abort(),
  };
}

/** `authorization: Bearer <file contents>`, read per call so a rotated token is used at once. */
function bearerFromFile(path: string): Interceptor {
  return (next) => (req) => {
    let token: string;
    try {
      token = readFileSync(path, "utf8").trim();
    } catch (e) {
      throw new ConnectError(`cannot read the ateapi token file ${path}: ${e instanceof Error ? e.message : String(e)}`, Code.Unauthenticated);
    }
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** The URL for messages: scheme, host and path only. */
function displayUrl(s: string): string {
  try {
    const u = new URL(s);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
  } catch {
    return "(invalid URL)";
  }
}
