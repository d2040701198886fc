/**
 * The Runtime SPI on agent-substrate actors (docs/runtimes.md "The substrate bridge"): one actor
 * per session, named by the session uid, in the bridge's atespace, of its one template.
 *
 *   Create    idempotent (the host calls it on every turn): GetActor, then by state: absent →
 *             CreateActor + ResumeActor; RUNNING → attach only; SUSPENDED or PAUSED → ResumeActor
 *             (restores the actor's own memory: an actor that holds state is never cold-booted);
 *             CRASHED → FAILED_PRECONDITION; moving → ABORTED (retryable). Then the attach step.
 *   Restore   the same, except that an absent actor whose ref says memory is refused: a fresh one
 *             would silently forget what the snapshot held.
 *   Snapshot  EXTERNAL = SuspendActor (idempotent); the ref is {local: uid, external_uri: the
 *             snapshot handle, memory: true}. LOCAL is refused: substrate keeps no warm state here.
 *   Stop      SuspendActor → DeleteActor → DeleteTag `fork-<uid>` (the actor first: an unsuspended
 *             clone still borrows its tag's copy).
 *   Status    GetActor: RUNNING LIVE, SUSPENDED/PAUSED COLD, CRASHED TERMINATED, else NONE.
 *
 * A placement that fails after it changed something undoes it: an actor created by this call is
 * deleted (it never served anyone), one this call resumed is suspended again (its memory kept).
 * Operations on one session run one at a time in this process (ateapi's lease guards the rest).
 * Memory forks are memory-fork.ts. @internal Used by substrate-service.ts; tested in
 * test/node/substrate/.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { ComputeState } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { ActorState, type Actor } from "../../proto/gen/ateapi/control_pb.js";
import { createKeyedQueue } from "../node/keyed-queue.js";
import type { RuntimeLog } from "../node/runtime-log.js";
import { computeStateOf, crashOf, isTransitional, snapshotHoldsMemory, snapshotUriOf, stateName, stateOf, workerOf } from "./actor-states.js";
import type { AteapiClient } from "./ateapi-client.js";
import type { Ref } from "./ateapi-requests.js";
import type { Attach, Dialback } from "./attach.js";
import { forkTagName, runMemoryFork, type ForkChildRequest } from "./memory-fork.js";

export interface SubstrateDeps {
  ateapi: AteapiClient;
  attach: Attach;
  /** The template every actor of this bridge is created from. */
  template: Ref;
  log: RuntimeLog;
  /** Clones a fan-out creates and resumes at once (default 4). */
  forkParallelism?: number;
  /** The budget of a failed fan-out's teardown, detached from the caller (default 30 s). */
  cleanupMs?: number;
}

export interface Placed {
  id: string;
  worker: string;
}

export interface ActorSnapshot {
  local: string;
  externalUri: string;
  memory: boolean;
}

export class SubstrateActors {
  private readonly _queue = createKeyedQueue();

  constructor(private readonly _d: SubstrateDeps) {}

  create(uid: string, dialback: Dialback): Promise<Placed> {
    return this._queue.run(uid, () => this._place(uid, dialback, false));
  }

  /** `memory`: the ref the host restores from captured memory, so an absent actor cannot stand in. */
  restore(uid: string, dialback: Dialback, memory: boolean, externalUri: string): Promise<Placed> {
    return this._queue.run(uid, () => this._place(uid, dialback, memory, externalUri));
  }

  snapshot(uid: string, kind: "LOCAL" | "EXTERNAL"): Promise<ActorSnapshot> {
    if (kind === "LOCAL") {
      return Promise.reject(
        new ConnectError(
          "substrate keeps no warm state: Snapshot(EXTERNAL) suspends the actor with its memory, and Restore resumes it",
          Code.FailedPrecondition,
        ),
      );
    }
    return this._queue.run(uid, async () => {
      const a = await this._d.ateapi.getActor(uid);
      // Never placed here: nothing to capture (a later Create starts from the template).
      if (!a) return { local: uid, externalUri: "", memory: false };
      if (stateOf(a) === ActorState.CRASHED) throw crashed(this._name(uid), a);
      const s = await this._d.ateapi.suspendActor(uid);
      const uri = snapshotUriOf(s);
      this._d.log({ level: "info", msg: "actor suspended", session: uid, snapshot: uri });
      return { local: uid, externalUri: uri, memory: uri !== "" && snapshotHoldsMemory(s) };
    });
  }

  stop(uid: string): Promise<void> {
    return this._queue.run(uid, async () => {
      const { ateapi } = this._d;
      const a = await ateapi.getActor(uid);
      if (a) {
        const s = stateOf(a);
        if (s === ActorState.RUNNING || s === ActorState.PAUSED) await ateapi.suspendActor(uid);
        try {
          await ateapi.deleteActor(uid, false);
        } catch (e) {
          // Moved out of SUSPENDED meanwhile (the router woke it): delete it as it is.
          if (!(e instanceof ConnectError && e.code === Code.FailedPrecondition)) throw e;
          await ateapi.deleteActor(uid, true);
        }
        this._d.log({ level: "info", msg: "actor deleted", session: uid });
      }
      // A fork child's retention pin goes with it; a failure is an error so Stop is retried.
      if (await ateapi.deleteTag(forkTagName(uid))) this._d.log({ level: "info", msg: "tag deleted", session: uid, tag: forkTagName(uid) });
    });
  }

  async status(uid: string): Promise<ComputeState> {
    return computeStateOf(await this._d.ateapi.getActor(uid));
  }

  /** A memory fan-out: every child cloned from the parent's snapshot `externalUri`, all or nothing. */
  forkMany(parent: string, externalUri: string, children: readonly ForkChildRequest[], signal: AbortSignal): Promise<Placed[]> {
    const keys = [parent, ...children.map((c) => c.uid)];
    return this._queue.run(keys, () =>
      runMemoryFork(
        {
          ...this._d,
          parallelism: this._d.forkParallelism ?? 4,
          cleanupMs: this._d.cleanupMs ?? 30_000,
          placed: (a, uid) => this._placed(a, uid),
        },
        { parent, externalUri, children, signal },
      ),
    );
  }

  private async _place(uid: string, dialback: Dialback, memory: boolean, externalUri = ""): Promise<Placed> {
    const a = await this._d.ateapi.getActor(uid);
    if (a) return this._bringBack(a, uid, dialback);
    if (memory) {
      throw new ConnectError(
        `actor ${this._name(uid)} is gone, so its memory snapshot ${externalUri || "(no handle)"} cannot be restored: a fresh actor would not hold it; the session's in-memory state is lost`,
        Code.FailedPrecondition,
      );
    }
    return this._fresh(uid, dialback);
  }

  /** A new actor from the template's golden snapshot: created, resumed, attached. */
  private async _fresh(uid: string, dialback: Dialback): Promise<Placed> {
    const { ateapi, attach, log } = this._d;
    try {
      await ateapi.createActor(uid, this._d.template);
    } catch (e) {
      // Another bridge replica created it meanwhile: take it as found.
      if (!(e instanceof ConnectError && e.code === Code.AlreadyExists)) throw e;
      const raced = await ateapi.getActor(uid);
      if (raced) return this._bringBack(raced, uid, dialback);
      throw e;
    }
    log({ level: "info", msg: "actor created", session: uid });
    try {
      const r = await ateapi.resumeActor(uid);
      await attach(uid, uid, dialback, true);
      log({ level: "info", msg: "actor attached", session: uid, restored: true });
      return this._placed(r.actor, uid);
    } catch (e) {
      // It never served anyone: remove it, so nothing is left and a retry starts clean.
      await this._quietly("delete the new actor", uid, () => ateapi.deleteActor(uid, true));
      throw e;
    }
  }

  /** An existing actor put back in service (its own memory), then attached. */
  private async _bringBack(a: Actor, uid: string, dialback: Dialback): Promise<Placed> {
    const { ateapi, attach, log } = this._d;
    const s = stateOf(a);
    if (s === ActorState.RUNNING) {
      await attach(uid, uid, dialback, false);
      log({ level: "info", msg: "actor attached", session: uid, restored: false });
      return this._placed(a, uid);
    }
    if (s === ActorState.SUSPENDED || s === ActorState.PAUSED) {
      const r = await ateapi.resumeActor(uid);
      log({ level: "info", msg: "actor resumed", session: uid, resumed: r.resumed });
      try {
        await attach(uid, uid, dialback, true);
      } catch (e) {
        // Back to where it was: suspended, its memory in a snapshot, no worker held.
        await this._quietly("suspend the actor again", uid, () => ateapi.suspendActor(uid));
        throw e;
      }
      log({ level: "info", msg: "actor attached", session: uid, restored: true });
      return this._placed(r.actor, uid);
    }
    if (s === ActorState.CRASHED) throw crashed(this._name(uid), a);
    if (isTransitional(a)) {
      throw new ConnectError(`actor ${this._name(uid)} is ${stateName(a)}: another operation is moving it; retry`, Code.Aborted);
    }
    throw new ConnectError(`actor ${this._name(uid)} is in ${stateName(a)}, which this bridge cannot place`, Code.FailedPrecondition);
  }

  private _placed(a: Actor, uid: string): Placed {
    return { id: uid, worker: workerOf(a) };
  }

  private _name(uid: string): string {
    return `${this._d.ateapi.atespace}/${uid}`;
  }

  /** An undo step: its failure is logged (with what is left behind), never thrown over the cause. */
  private async _quietly(what: string, uid: string, step: () => Promise<unknown>): Promise<void> {
    try {
      await step();
    } catch (e) {
      this._d.log({ level: "warn", msg: `could not ${what}`, session: uid, error: ConnectError.from(e).rawMessage });
    }
  }
}

function crashed(name: string, a: Actor): ConnectError {
  return new ConnectError(`actor ${name} CRASHED (${crashOf(a)}): its memory is lost; Stop the session's compute to remove it`, Code.FailedPrecondition);
}
