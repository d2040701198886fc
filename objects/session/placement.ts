/**
 * Where a session's harness runs, decided before anything is journaled: admission (describe within
 * a bound, then CanPlace), the live re-check of a harness a runtime backend placed, placing and
 * restoring an incarnation on that backend, pausing it warm after a turn, and one structured log
 * line per decision (docs/behaviour.md §6.1). Writes nothing to the journal; the placement column
 * of the metadata row is its only state.
 * @internal
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, SnapshotRefSchema, type SnapshotRef } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { HarnessResolver } from "../../runtimes/builtin/index.js";
import type { Runtime } from "../../runtimes/runtime-spi.js";
import { HarnessDescribeError } from "../controller/errors.js";
import type { DescribeHarness, DescribedHarness } from "../controller/identity.js";
import { currentRequestId } from "../request-context.js";
import { failure, success, type Outcome } from "./outcomes.js";
import type { ServedHarness, SessionState } from "./state.js";
import { writeLogLine } from "../log-line.js";

/** How long admission waits for a harness to describe itself (docs/behaviour.md §6.1). */
export const DESCRIBE_TIMEOUT_MS = 10_000;

/** A placement decision, as logged (docs/behaviour.md §6.1): never content, config, fences or tokens. */
export interface PlacementLine {
  op: "admit" | "place" | "recheck" | "recover" | "fork";
  decision: "admitted" | "placed" | "refused" | "unavailable" | "unknown" | "mismatch" | "error";
  harness: string;
  harnessId?: string;
  runtime: string;
  startedMs: number;
}

export class Placement {
  /**
   * The built-in harness and descriptor id this object last admitted. Admitting the same again
   * (the next turn of a session) asked nothing outside the isolate and decided nothing new, so it
   * writes no line (docs/observability.md); any other decision does, and forgets it. A harness
   * described over the network (a tunnel, a runtime backend) logs every admission: its Describe
   * took time worth seeing.
   */
  private _admitted = "";

  constructor(private readonly _s: SessionState) {}

  /** Admission (docs/behaviour.md §6.1): describe within the bound, then CanPlace. Writes nothing. */
  async admit(name: string): Promise<Outcome<DescribedHarness & { served: ServedHarness }>> {
    const startedMs = this._s.d.now();
    let builtin = false;
    const line = (decision: PlacementLine["decision"], runtime: Runtime | undefined, harnessId?: string) => {
      const again = builtin && decision === "admitted" ? `${name}\0${harnessId}` : "";
      if (again && again === this._admitted) return;
      this._admitted = again;
      this.log({ op: "admit", decision, harness: name, harnessId, runtime: (runtime ?? this._s.runtime).name, startedMs });
    };
    const served = await this._s.served(name);
    builtin = served !== undefined && !served.runtime && this._s.harnesses.get(name) === served.harness;
    if (!served) {
      line("unknown", undefined);
      return failure("unknown_harness", `harness "${name}" is not served here`);
    }
    const harness = served.harness;
    let descriptor;
    try {
      // A runtime backend describes a harness it hosts without starting it.
      descriptor = served.runtime
        ? await served.runtime.describe(name, AbortSignal.timeout(DESCRIBE_TIMEOUT_MS))
        : await describeWithin(harness, DESCRIBE_TIMEOUT_MS);
    } catch (e) {
      // A backend or harness that answered Describe with a terminal error (runtimes/http keeps the
      // backend's code, the retryable ones arriving as UNAVAILABLE; runtimes/tunnel gives a tunnel
      // harness's answer Code.Unknown) is not unavailable: retrying will not help
      // (docs/behaviour.md §6.1 "an answered error"; checklist §8.16 #150).
      if (e instanceof ConnectError && e.code !== Code.Unavailable) {
        line("error", served.runtime);
        const who = served.runtime ? `the ${served.runtime.name} runtime` : "the harness";
        return failure("internal", `${who} answered Describe for harness "${name}" with an error (${Code[e.code]}: ${e.rawMessage}); nothing was written`);
      }
      line("unavailable", served.runtime);
      return failure("harness_unavailable", `harness "${name}" cannot be described: ${e instanceof Error ? e.message : "error"}; retry when it is back`);
    }
    if (!descriptor) {
      line("unavailable", served.runtime);
      return failure("harness_unavailable", `harness "${name}" did not describe itself within 10 s; retry later`);
    }
    if (served.expectId && descriptor.id !== served.expectId) {
      line("mismatch", served.runtime, descriptor.id);
      return failure("harness_mismatch", `harness "${name}" is registered for descriptor id "${served.expectId}" but describes itself as "${descriptor.id}"`);
    }
    const described = { name, harness, descriptor, served };
    const refused = this.canPlace(described, served.runtime);
    line(refused ? "refused" : "admitted", served.runtime, descriptor.id);
    return refused ? failure("unplaceable", refused) : success(described);
  }

  /**
   * The live re-check (docs/behaviour.md §6.1; checklist §8.16 #151). A backend describes a harness it
   * has not started, so once its incarnation has dialled back, the harness on this session's own
   * connection is described and gated too: the registration's descriptor id, and CanPlace on that
   * backend. Runs after placement and before anything is journaled; writes nothing.
   */
  async recheckLive(name: string, served: ServedHarness, describe: DescribeHarness = this._s.describer()): Promise<Outcome<true>> {
    const rt = served.runtime;
    if (!rt) return success(true);
    const startedMs = this._s.d.now();
    const line = (decision: PlacementLine["decision"], harnessId?: string) =>
      this.log({ op: "recheck", decision, harness: name, harnessId, runtime: rt.name, startedMs });
    const live = await describe(name).catch((e: unknown) => {
      if (e instanceof HarnessDescribeError) return e;
      throw e;
    });
    if (!live || live instanceof HarnessDescribeError) {
      line("unavailable");
      const cause = live?.cause instanceof Error ? live.cause.message : "it is not served there";
      return failure(
        "harness_unavailable",
        `the ${rt.name} runtime placed harness "${name}", but it did not describe itself on its connection (${cause}); nothing was written, retry`,
      );
    }
    const id = live.descriptor.id;
    if (served.expectId && id !== served.expectId) {
      line("mismatch", id);
      return failure(
        "harness_mismatch",
        `harness "${name}" is registered for descriptor id "${served.expectId}" but the placed harness describes itself as "${id}"; nothing was written`,
      );
    }
    const refused = this.canPlace(live, rt);
    line(refused ? "refused" : "admitted", id);
    return refused
      ? failure("unplaceable", `${refused} (as the placed harness describes itself; its backend's Describe said otherwise); nothing was written`)
      : success(true);
  }

  /** One structured line per placement decision; refusals are INFO (the caller's problem, not ours). */
  log(p: PlacementLine): void {
    const meta = this._s.meta.load();
    const line = {
      level: p.decision === "unavailable" || p.decision === "error" ? "warn" : "info",
      msg: "placement",
      component: "placer",
      request_id: currentRequestId(),
      op: p.op,
      decision: p.decision,
      tenant: meta?.tenant ?? "",
      session: meta?.uid ?? "",
      harness: p.harness,
      harness_id: p.harnessId ?? "",
      runtime: p.runtime,
      duration_ms: this._s.d.now() - p.startedMs,
    };
    (this._s.d.log ?? writeLogLine)(line);
  }

  /** CanPlace (docs/contract.md §6.1): a memory-snapshot harness needs a runtime that takes them. */
  canPlace(h: DescribedHarness, runtime: Runtime = this._s.runtime): string | undefined {
    if (h.descriptor.capabilities?.resumability !== Resumability.REQUIRES_MEMORY_SNAPSHOT) return undefined;
    if (runtime.capabilities().memorySnapshot) return undefined;
    return `harness "${h.name}" requires memory snapshots, which the ${runtime.name} runtime cannot take`;
  }

  /**
   * Makes sure a runtime-backed harness has a live incarnation before it runs: restores a paused
   * or stopped one from `ref` (the session's own latest SUSPEND ref; a bare `{local: uid}` without
   * one), else creates one (idempotent on the backend); its process dials back before this
   * returns. The built-in and tunnel placements need nothing. A memory snapshot the backend can no
   * longer restore (its actor gone, crashed, or superseded) is `snapshot_unusable`: a fresh
   * incarnation would silently forget the session's in-memory state (docs/runtimes.md).
   */
  async ensurePlaced(name: string, served: ServedHarness, ref?: SnapshotRef): Promise<Outcome<true>> {
    const rt = served.runtime;
    if (!rt) return success(true);
    const startedMs = this._s.d.now();
    const line = (decision: PlacementLine["decision"]) => this.log({ op: "place", decision, harness: name, runtime: rt.name, startedMs });
    const paused = this._s.meta.load()!.placement;
    const restoring = paused === ComputeState.COMPUTE_WARM || paused === ComputeState.COMPUTE_COLD;
    const from = ref ?? create(SnapshotRefSchema, { local: this._s.uid });
    try {
      const spec = { sessionUid: this._s.uid, harness: name, dialback: await rt.dialback(name) };
      if (restoring) await rt.restore(from, spec);
      else await rt.create(spec);
    } catch (e) {
      if (restoring && from.memory && e instanceof ConnectError && e.code === Code.FailedPrecondition) {
        line("refused");
        return failure(
          "snapshot_unusable",
          `the ${rt.name} runtime cannot restore memory snapshot ${from.externalUri || from.local} of this session (${e.rawMessage}); nothing was written; the session's in-memory state cannot be brought back, so continue in a new session`,
        );
      }
      line("unavailable");
      return failure(
        "harness_unavailable",
        `the ${rt.name} runtime could not place harness "${name}": ${e instanceof Error ? e.message : "error"}; nothing was written, retry`,
      );
    }
    line("placed");
    this._s.meta.setPlacement(ComputeState.COMPUTE_LIVE);
    return success(true);
  }

  /** After a turn, a runtime-backed incarnation is paused warm (its worker held, its CPU freed). */
  async pauseWarm(served: ServedHarness): Promise<void> {
    const rt = served.runtime;
    if (!rt) return;
    try {
      await rt.snapshot({ id: this._s.uid, worker: "", address: "", runtime: rt.name, fence: this._s.journal.fence() }, "LOCAL");
      this._s.meta.setPlacement(ComputeState.COMPUTE_WARM);
    } catch {
      // A backend that cannot pause keeps the incarnation live; the next turn reuses it.
    }
  }
}

export async function describeWithin(h: NonNullable<ReturnType<HarnessResolver["get"]>>, ms: number) {
  const ac = new AbortController();
  const answer = h.describe(ac.signal);
  // A harness that answered at once (every built-in does) needs no timer: one set and cleared
  // on every turn was a measurable part of a turn's CPU in workerd.
  if (!isThenable(answer)) return answer;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      Promise.resolve(answer),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => {
          ac.abort();
          resolve(undefined);
        }, ms);
      }),
    ]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

function isThenable<T>(v: T | PromiseLike<T>): v is PromiseLike<T> {
  return typeof (v as { then?: unknown } | null)?.then === "function";
}
