/**
 * Controller replay (docs/behaviour.md §2.4): re-run every completed execution against the journal with
 * the replay sink. Nothing is invoked (I1) and nothing is written (I5); the report says what the
 * harness produced, where it diverged, and how many live model calls happened (must be 0).
 * Used by the Audit service; tested in test/node/controller/replay.test.ts.
 */
import { textOf } from "../../proto/messages.js";
import { EventKind } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescribeError, HarnessMismatchError, ReplayDivergedError } from "./errors.js";
import { checkInputs, parseExecutions, type LoggedEvent, type ParsedLog } from "./execution-log.js";
import { recordedHarnessStart } from "./harness-start.js";
import { cachedDescriber, harnessFor, type DescribeHarness, type DescribedHarness } from "./identity.js";
import type { ModelInvoker } from "./models.js";
import { RecordedSink } from "./recorded-sink.js";

export interface ReplayReport {
  ok: boolean;
  /** Text of every OUTPUT served, in order. */
  outputs: string[];
  /** Why replay failed ("" when ok). */
  divergence: string;
  /** The seq the divergence points at (0 when it names no record). */
  divergenceSeq: bigint;
  /** Live model calls made while replaying: always 0 unless I1 is broken. */
  modelCalls: number;
  executions: number;
}

export interface ReplayOptions {
  sessionUid: string;
  describe: DescribeHarness;
  defaultHarness: string;
  /** Only used to prove it was never called. */
  models: ModelInvoker;
  signal?: AbortSignal;
}

/** `journal`: its records, or their parse when the caller keeps one (objects/session/session-cache.ts). */
export async function replayJournal(journal: LoggedEvent[] | ParsedLog, o: ReplayOptions): Promise<ReplayReport> {
  const callsBefore = o.models.calls;
  const report = (ok: boolean, outputs: string[], divergence = "", seq = 0n, executions = 0): ReplayReport => ({
    ok,
    outputs,
    divergence,
    divergenceSeq: seq,
    modelCalls: o.models.calls - callsBefore,
    executions,
  });
  const parsed = Array.isArray(journal) ? parseExecutions(journal) : journal;
  if (!parsed.ok) return report(false, [], `invalid execution log: ${parsed.detail}`, parsed.seq);
  if (parsed.latestOnly) throw new Error("replay needs the whole journal's parse, not the latest execution's (SessionCache.parsed)");
  const completed = parsed.executions.filter((ex) => ex.endState === "COMPLETED");

  // Preflight every completed execution before any harness runs (§2.4 step 3).
  const describe = cachedDescriber(o.describe);
  const harnesses: DescribedHarness[] = [];
  for (const ex of completed) {
    const inputs = checkInputs(ex);
    if (!inputs.ok) return report(false, [], `invalid execution log: ${inputs.detail}`, ex.firstSeq);
    try {
      harnesses.push(await harnessFor(ex, describe, o.defaultHarness));
    } catch (e) {
      if (e instanceof HarnessMismatchError || e instanceof HarnessDescribeError) return report(false, [], e.message, ex.firstSeq);
      throw e;
    }
  }

  const outputs: string[] = [];
  for (let i = 0; i < completed.length; i++) {
    const ex = completed[i]!;
    const sink = new RecordedSink({ effects: ex.effects });
    const start = recordedHarnessStart(o.sessionUid, parsed, ex, o.signal ?? new AbortController().signal);
    let error: unknown;
    try {
      await harnesses[i]!.harness.run(start, sink);
    } catch (e) {
      error = e;
    }
    sink.seal();
    const diverged = sink.latched ?? (error === undefined ? sink.leftover() : undefined);
    if (diverged instanceof ReplayDivergedError) return report(false, outputs, diverged.message, diverged.seq, i + 1);
    if (error !== undefined) {
      const why = error instanceof Error ? error.message : String(error);
      return report(false, outputs, `execution ${ex.id} completed live but failed on replay: ${why}`, ex.firstSeq, i + 1);
    }
    for (const eff of ex.effects) {
      if (eff.event.kind === EventKind.EVENT_OUTPUT && eff.event.body.case === "message") outputs.push(textOf(eff.event.body.value));
    }
  }
  return report(true, outputs, "", 0n, completed.length);
}
