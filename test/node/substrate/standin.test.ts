/**
 * The stand-in ateapi itself (test/fixtures/ateapi), over real gRPC: the parts of substrate's actor
 * state machine the bridge relies on, so the bridge's tests rest on the documented behaviour and
 * not on a fake that agrees with whatever the bridge does. ALREADY_EXISTS on a repeated create,
 * a reentrant resume, an idempotent suspend, delete only when suspended, leases, clones only from
 * a tag and only with the tag's template, tags as retention pins, CRASHED on a failed restore.
 */
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorState, Control } from "../../../proto/gen/ateapi/control_pb.js";
import {
  createActorRequest,
  createTagRequest,
  deleteActorRequest,
  deleteTagRequest,
  getActorRequest,
  resumeActorRequest,
  suspendActorRequest,
} from "../../../runtimes/substrate/ateapi-requests.js";
import { startStandin, type Standin } from "../../fixtures/ateapi/standin.js";
import { until } from "../pod/support.js";
import { ATESPACE, HARNESSES, uid } from "./support.js";

let standin: Standin;
let c: Client<typeof Control>;
beforeAll(async () => {
  standin = await startStandin({ atespaces: [ATESPACE], templates: { counter: HARNESSES.counter, echo: HARNESSES.echo2 } });
  c = createClient(Control, createGrpcTransport({ baseUrl: standin.url }));
});
afterAll(async () => {
  await standin?.close();
});

const ref = (name: string) => ({ atespace: ATESPACE, name });
const COUNTER = ref("counter");

async function code(p: Promise<unknown>): Promise<Code | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e).code,
  );
}

describe("stand-in ateapi: actors", () => {
  it("create: SUSPENDED, borrowing the template's golden snapshot; a second create is ALREADY_EXISTS", async () => {
    const name = uid();
    const a = await c.createActor(createActorRequest(ref(name), COUNTER));
    expect(a.status?.state).toBe(ActorState.SUSPENDED);
    expect(a.status?.externalSnapshot?.snapshotUri).toMatch(/^standin:\/\/ate-golden\/counter\//);
    expect(await code(c.createActor(createActorRequest(ref(name), COUNTER)))).toBe(Code.AlreadyExists);
    expect(await code(c.createActor(createActorRequest(ref(uid()), ref("no-such-template"))))).toBe(Code.FailedPrecondition);
    await c.deleteActor(deleteActorRequest(ref(name), false));
  });

  it("resume: RUNNING with a worker; again is resumed=false; suspend writes a new snapshot, and again is unchanged", async () => {
    const name = uid();
    await c.createActor(createActorRequest(ref(name), COUNTER));
    const r = await c.resumeActor(resumeActorRequest(ref(name)));
    expect([r.resumed, r.actor?.status?.state]).toEqual([true, ActorState.RUNNING]);
    expect(r.actor?.status?.workerAssignment?.workerPod).toMatch(/^standin-worker-/);
    expect((await c.resumeActor(resumeActorRequest(ref(name)))).resumed).toBe(false);
    const s1 = await c.suspendActor(suspendActorRequest(ref(name)));
    const s2 = await c.suspendActor(suspendActorRequest(ref(name)));
    expect(s1.actor?.status?.state).toBe(ActorState.SUSPENDED);
    expect(s1.actor?.status?.workerAssignment).toBeUndefined();
    expect(s2.actor?.status?.externalSnapshot?.snapshotUri).toBe(s1.actor?.status?.externalSnapshot?.snapshotUri);
    expect(s1.actor?.status?.externalSnapshot?.snapshotUri).not.toMatch(/golden/);
    await c.deleteActor(deleteActorRequest(ref(name), false));
    expect(await code(c.getActor(getActorRequest(ref(name))))).toBe(Code.NotFound);
  });

  it("delete: a RUNNING actor only with any_state; a concurrent operation on one actor is ABORTED (its lease)", async () => {
    const name = uid();
    await c.createActor(createActorRequest(ref(name), COUNTER));
    const first = code(c.resumeActor(resumeActorRequest(ref(name))));
    await until(() => standin.actor(name)?.state === ActorState.RESUMING, "the first resume to hold the lease");
    expect(await code(c.resumeActor(resumeActorRequest(ref(name))))).toBe(Code.Aborted);
    expect(await first).toBeUndefined();
    expect(await code(c.deleteActor(deleteActorRequest(ref(name), false)))).toBe(Code.FailedPrecondition);
    await c.deleteActor(deleteActorRequest(ref(name), true));
    expect(standin.actor(name)).toBeUndefined();
  });
});

describe("stand-in ateapi: tags", () => {
  it("tag: only from a SUSPENDED actor; clones only from a tag, with the tag's template; the clone restores the copy", async () => {
    const parent = uid();
    await c.createActor(createActorRequest(ref(parent), COUNTER));
    await c.resumeActor(resumeActorRequest(ref(parent)));
    expect(await code(c.createTag(createTagRequest(ref(`fork-${parent}`), ref(parent))))).toBe(Code.FailedPrecondition);
    await c.suspendActor(suspendActorRequest(ref(parent)));
    const tag = await c.createTag(createTagRequest(ref(`fork-${parent}`), ref(parent)));
    expect(tag.status?.snapshot?.snapshotUri).toMatch(/^standin:\/\/agentsessions\/tags\//);
    expect(await code(c.createTag(createTagRequest(ref(`fork-${parent}`), ref(parent))))).toBe(Code.AlreadyExists);

    expect(await code(c.createActor(createActorRequest(ref(uid()), COUNTER, ref("no-such-tag"))))).toBe(Code.FailedPrecondition);
    expect(await code(c.createActor(createActorRequest(ref(uid()), ref("echo"), ref(`fork-${parent}`))))).toBe(Code.FailedPrecondition);
    const clone = uid();
    const a = await c.createActor(createActorRequest(ref(clone), COUNTER, ref(`fork-${parent}`)));
    expect(a.status?.externalSnapshot?.snapshotUri).toBe(tag.status?.snapshot?.snapshotUri);
    expect((await c.resumeActor(resumeActorRequest(ref(clone)))).actor?.status?.state).toBe(ActorState.RUNNING);
    await c.deleteActor(deleteActorRequest(ref(clone), true));
    await c.deleteTag(deleteTagRequest(ref(`fork-${parent}`)));
    await c.deleteActor(deleteActorRequest(ref(parent), false));
  });

  it("tag: a retention pin: deleting it under a clone that never suspended makes the clone's restore fail (CRASHED)", async () => {
    const parent = uid();
    await c.createActor(createActorRequest(ref(parent), COUNTER));
    await c.createTag(createTagRequest(ref(`fork-${parent}`), ref(parent)));
    const clone = uid();
    await c.createActor(createActorRequest(ref(clone), COUNTER, ref(`fork-${parent}`)));
    await c.deleteTag(deleteTagRequest(ref(`fork-${parent}`)));
    expect(await code(c.resumeActor(resumeActorRequest(ref(clone))))).toBe(Code.FailedPrecondition);
    const crashed = await c.getActor(getActorRequest(ref(clone)));
    expect(crashed.status?.state).toBe(ActorState.CRASHED);
    expect(crashed.status?.crash?.message).toContain("is gone");
    // CRASHED actors are deletable without any_state.
    await c.deleteActor(deleteActorRequest(ref(clone), false));
    await c.deleteActor(deleteActorRequest(ref(parent), false));
  });
});
