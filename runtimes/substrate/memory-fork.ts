/**
 * A memory fork's fan-out on substrate (ForkMany, docs/runtimes.md "ForkMany"): N children cloned
 * from the parent's ONE snapshot, the one the host's checkpoint recorded, all or nothing.
 *
 *   1. No child actor may exist yet (its memory would not be this fork's, and the teardown must
 *      never remove what it did not make).
 *   2. The parent must be SUSPENDED and still hold exactly that snapshot.
 *   3. Per child, one at a time (a tag leases the parent): CreateTag `fork-<child>` copies the
 *      parent's snapshot, then the parent is checked again. A tag captures whatever the parent
 *      holds when it is taken, and the platform may wake and re-suspend the parent at any time
 *      (the router resumes on any request), so a snapshot other than the recorded one means the
 *      copy is of a later memory: refused FAILED_PRECONDITION naming both snapshots.
 *   4. Per child, `parallelism` at a time: CreateActor from its tag (same template), ResumeActor
 *      (a restore of the copy), then the attach step with the child's own dialback.
 *
 * Any failure, or the caller giving up (checked between steps; an attach in flight is cut, ateapi
 * calls are let finish so their outcome is known), stops the fan-out and tears down everything it
 * made, on a budget of its own detached from the caller's: the clones first (an unsuspended clone borrows its
 * tag's copy), then the tags. The parent is left as it was (SUSPENDED). What the teardown could not
 * remove is named in the error and logged. The cost is N snapshot copies and N restores: substrate
 * has no copy-on-write clone.
 * @internal Used by actors.ts; tested against the stand-in in test/node/substrate/fork.test.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ActorState, type Actor } from "../../proto/gen/ateapi/control_pb.js";
import type { RuntimeLog } from "../node/runtime-log.js";
import { snapshotUriOf, stateName, stateOf } from "./actor-states.js";
import type { AteapiClient } from "./ateapi-client.js";
import type { Ref } from "./ateapi-requests.js";
import type { Attach, Dialback } from "./attach.js";

export interface ForkChildRequest {
  uid: string;
  dialback: Dialback;
}

export interface MemoryForkDeps {
  ateapi: AteapiClient;
  attach: Attach;
  template: Ref;
  log: RuntimeLog;
  parallelism: number;
  cleanupMs: number;
  placed(a: Actor, uid: string): { id: string; worker: string };
}

export interface MemoryFork {
  parent: string;
  /** The parent's snapshot handle from the host's checkpoint (the SUSPEND ref's external_uri). */
  externalUri: string;
  children: readonly ForkChildRequest[];
  /** The caller's; aborting it stops the fan-out (and tears it down). */
  signal: AbortSignal;
}

/** The tag a fork child is cloned from, and which its Stop deletes. */
export function forkTagName(childUid: string): string {
  return `fork-${childUid}`;
}

export async function runMemoryFork(d: MemoryForkDeps, f: MemoryFork): Promise<{ id: string; worker: string }[]> {
  const started = Date.now();
  const made: Made = { actors: [], tags: [] };
  const name = (n: string) => `${d.ateapi.atespace}/${n}`;
  try {
    for (const c of f.children) {
      if (await d.ateapi.getActor(c.uid)) {
        throw new ConnectError(
          `actor ${name(c.uid)} already exists: session ${c.uid} already has compute here; Stop it, or fork to new uids`,
          Code.AlreadyExists,
        );
      }
    }
    await checkParent(d, f, "before tagging");
    for (const c of f.children) {
      stopIfCanceled(f.signal);
      await tagFor(d, c.uid, f.parent, made);
      await checkParent(d, f, `after tagging ${forkTagName(c.uid)}`);
    }
    const placed = await mapBounded(f.children, d.parallelism, async (c) => {
      stopIfCanceled(f.signal);
      made.actors.push(c.uid); // before the call: a cut call may still have created it
      try {
        await d.ateapi.createActor(c.uid, d.template, forkTagName(c.uid));
      } catch (e) {
        // Someone else's actor took the name meanwhile: never ours to remove.
        if (e instanceof ConnectError && e.code === Code.AlreadyExists) made.actors.splice(made.actors.indexOf(c.uid), 1);
        throw e;
      }
      const r = await d.ateapi.resumeActor(c.uid);
      await d.attach(c.uid, c.uid, c.dialback, true, f.signal);
      return d.placed(r.actor, c.uid);
    });
    // A caller that gave up during the last step would never learn of these children.
    stopIfCanceled(f.signal);
    d.log({ level: "info", msg: "fork", parent: f.parent, children: f.children.length, outcome: "ok", duration_ms: Date.now() - started });
    return placed;
  } catch (e) {
    // Whatever failed once the caller gave up failed because it gave up.
    const err = f.signal.aborted ? canceled(e) : ConnectError.from(e);
    const left = await teardown(d, made);
    d.log({
      level: left.length ? "error" : "info",
      msg: "fork",
      parent: f.parent,
      children: f.children.length,
      outcome: Code[err.code],
      error: err.rawMessage,
      removed: made.actors.length + made.tags.length - left.length,
      ...(left.length ? { left } : {}),
      duration_ms: Date.now() - started,
    });
    if (!left.length) throw err;
    throw new ConnectError(`${err.rawMessage}; the teardown could not remove ${left.join(", ")}: remove them by hand`, err.code, err.metadata, undefined, err);
  }
}

interface Made {
  actors: string[];
  tags: string[];
}

/** The parent is SUSPENDED and holds exactly the recorded snapshot, else FAILED_PRECONDITION naming it. */
async function checkParent(d: MemoryForkDeps, f: MemoryFork, when: string): Promise<void> {
  const name = `${d.ateapi.atespace}/${f.parent}`;
  const a = await d.ateapi.getActor(f.parent);
  if (!a) throw new ConnectError(`parent actor ${name} is gone ${when}: there is no snapshot ${f.externalUri} to clone`, Code.FailedPrecondition);
  if (stateOf(a) !== ActorState.SUSPENDED) {
    throw new ConnectError(
      `parent actor ${name} is ${stateName(a)} ${when}: it was woken after the checkpoint, so snapshot ${f.externalUri} is stale; checkpoint the parent again and fork at the new head`,
      Code.FailedPrecondition,
    );
  }
  const now = snapshotUriOf(a);
  if (now !== f.externalUri) {
    throw new ConnectError(
      `parent actor ${name}'s snapshot ${f.externalUri} was superseded by ${now || "(none)"} ${when} (the parent was woken and suspended again): checkpoint the parent again and fork at the new head`,
      Code.FailedPrecondition,
    );
  }
}

/** CreateTag `fork-<child>`; a leftover of an earlier failed attempt (no actor uses it: step 1) is replaced. */
async function tagFor(d: MemoryForkDeps, child: string, parent: string, made: Made): Promise<void> {
  const tag = forkTagName(child);
  let t;
  try {
    made.tags.push(tag); // before the call: the name is reserved before the copy starts
    t = await d.ateapi.createTag(tag, parent);
  } catch (e) {
    if (!(e instanceof ConnectError && e.code === Code.AlreadyExists)) throw e;
    await d.ateapi.deleteTag(tag);
    t = await d.ateapi.createTag(tag, parent);
  }
  if (!t.status?.snapshot?.snapshotUri) {
    throw new ConnectError(`tag ${d.ateapi.atespace}/${tag} has no snapshot copy yet: the copy did not complete; retry the fork`, Code.Unavailable);
  }
}

/** Clones first, then the tags (only those whose clone is gone), on the teardown's own budget. */
async function teardown(d: MemoryForkDeps, made: Made): Promise<string[]> {
  const deadline = Date.now() + d.cleanupMs;
  const left: string[] = [];
  const name = (n: string) => `${d.ateapi.atespace}/${n}`;
  const step = async (what: string, fn: () => Promise<unknown>): Promise<boolean> => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      left.push(what);
      return false;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([fn(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("teardown budget spent")), remaining)))]);
      return true;
    } catch (e) {
      d.log({ level: "warn", msg: "fork teardown step failed", step: what, error: e instanceof Error ? e.message : String(e) });
      left.push(what);
      return false;
    } finally {
      clearTimeout(timer);
    }
  };
  const keptTags = new Set<string>();
  for (const uid of made.actors) {
    if (!(await step(`actor ${name(uid)}`, () => d.ateapi.deleteActor(uid, true)))) keptTags.add(forkTagName(uid));
  }
  for (const tag of made.tags) {
    // A clone that could not be deleted keeps its tag: without it, it could never be restored or inspected.
    if (keptTags.has(tag)) left.push(`tag ${name(tag)}`);
    else await step(`tag ${name(tag)}`, () => d.ateapi.deleteTag(tag));
  }
  return left;
}

function stopIfCanceled(signal: AbortSignal): void {
  if (signal.aborted) throw canceled();
}

function canceled(cause?: unknown): ConnectError {
  return new ConnectError("the caller gave up on the fork; what it made is being removed", Code.Canceled, undefined, undefined, cause);
}

/** `fn` over `items`, at most `limit` at once; after the first failure no new item starts, and it is thrown once all in flight settled. */
async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed: { e: unknown } | undefined;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (e) {
        failed ??= { e };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failed) throw failed.e;
  return out;
}
