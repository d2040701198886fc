/**
 * Controller recovery (docs/behaviour.md §2.5): re-drive the latest execution when it never ended.
 *
 * The harness is re-run with the recorded Start (same execution id, inputs, config, cursor;
 * history = everything before the execution). Recorded effects are served; a trailing MODEL_CALL
 * without its OUTPUT is answered by one provider call; then the sink goes live. Success appends
 * END; a failure appends ERROR; a recorded prefix the harness did not consume is a divergence and
 * never gets an END. Start values always come from the journal, never from the caller.
 */
import { Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { EventKind } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { gateMismatch } from "./gate-preflight.js";
import { HarnessDescribeError, HarnessMismatchError, InheritedToolIntentError } from "./errors.js";
import { checkInputs, latestExecution, parseExecutions, type Execution, type LoggedEvent, type ParsedLog } from "./execution-log.js";
import { recordedHarnessStart } from "./harness-start.js";
import { harnessFor, type DescribeHarness, type DescribedHarness } from "./identity.js";
import { concludeTurn, preferPark, runHarness, type TurnOutcome } from "./live-turn.js";
import type { InputHashCache } from "./input-hash.js";
import { LiveSink, type LiveSinkOptions } from "./live-sink.js";
import type { ModelInvoker } from "./models.js";
import { RecordedSink } from "./recorded-sink.js";
import { TurnWriter, type EventExternalizer, type RecordObserver, type TurnLog } from "./turn-writer.js";

export type ResumeOutcome =
  /** The latest execution already ended (or there is none): nothing to do, nothing written. */
  | { kind: "noop" }
  /** The journal cannot be recovered as it stands; nothing was written or run. */
  | { kind: "invalid"; detail: string; incomplete: boolean }
  /** The recorded harness is not served here, or not the version that ran; nothing written. */
  | { kind: "mismatch"; detail: string }
  /** The recorded evidence contradicts itself (a gate that does not correlate); nothing run or written. */
  | { kind: "diverged"; detail: string }
  /** The recorded harness is served but did not describe itself (the cause kept); nothing written. */
  | { kind: "describe_failed"; detail: string; answered: boolean }
  /** The runtime cannot place the harness (CanPlace); nothing written. */
  | { kind: "unplaceable"; detail: string }
  /** The interrupted effect was copied from a fork parent; re-driving it could repeat the parent's. */
  | { kind: "inherited"; detail: string }
  | { kind: "redriven"; outcome: TurnOutcome };

export interface ResumeOptions {
  /** Host-executed tools and approvals for the re-driven execution. */
  tools?: LiveSinkOptions["tools"];
  sessionUid: string;
  log: TurnLog;
  /** Mints the fence for this recovery's placement; called only once every check has passed. */
  mintFence: () => bigint;
  /** CanPlace: a refusal reason, or undefined when the harness can run here. */
  place?: (h: DescribedHarness) => string | undefined;
  describe: DescribeHarness;
  defaultHarness: string;
  models: ModelInvoker;
  observe: RecordObserver;
  onDelta?: (chunk: string, done: boolean) => void;
  signal: AbortSignal;
  /** The session's incremental input hash (input-hash.ts). */
  inputHash?: InputHashCache;
  /** Stores parts over the inline limit as blobs before their records commit (docs/blobs.md). */
  blobs?: EventExternalizer;
}

/**
 * `journal`: its records, or their parse when the caller keeps one (objects/session/session-cache.ts).
 * Blob references in it must already be resolved (docs/blobs.md): the harness is served recorded
 * effects as they were, never a reference.
 */
export async function resumeLatest(journal: LoggedEvent[] | ParsedLog, o: ResumeOptions): Promise<ResumeOutcome> {
  const parsed = Array.isArray(journal) ? parseExecutions(journal) : journal;
  if (!parsed.ok) return { kind: "invalid", detail: parsed.detail, incomplete: false };
  const ex = latestExecution(parsed);
  if (!ex) return { kind: "noop" };
  // Checked before the finished-turn no-op: a count-short completed turn is malformed, not done (checklist §8.17 #181).
  const inputs = checkInputs(ex);
  if (!inputs.ok) return { kind: "invalid", detail: inputs.detail, incomplete: inputs.incomplete };
  if (ex.endState !== undefined) return { kind: "noop" };
  // A gate that does not correlate diverges before anything runs or is appended (checklist §8.14 #117).
  const gate = gateMismatch(ex);
  if (gate) return { kind: "diverged", detail: `replay diverged at seq ${gate.seq}: ${gate.detail}` };
  let served;
  try {
    served = await harnessFor(ex, o.describe, o.defaultHarness);
  } catch (e) {
    if (e instanceof HarnessMismatchError) return { kind: "mismatch", detail: e.message };
    if (e instanceof HarnessDescribeError) return { kind: "describe_failed", detail: e.message, answered: e.answered };
    throw e;
  }

  const refused = o.place?.(served);
  if (refused) return { kind: "unplaceable", detail: refused };
  const inherited = inheritedIntent(parsed, ex);
  if (inherited !== undefined) return { kind: "inherited", detail: new InheritedToolIntentError(inherited).message };
  const writer = new TurnWriter(o.log, o.mintFence(), o.observe, o.blobs);
  const stateless = served.descriptor.capabilities?.resumability !== Resumability.REQUIRES_MEMORY_SNAPSHOT;
  const live = new LiveSink({
    executionId: ex.id,
    writer,
    models: o.models,
    signal: o.signal,
    onDelta: o.onDelta,
    inputHash: o.inputHash,
    historyThrough: ex.firstSeq - 1n,
    tools: o.tools && { ...o.tools, approvalsAllowed: o.tools.approvalsAllowed && stateless },
  });
  const sink = new RecordedSink({ effects: ex.effects, live, inputHash: o.inputHash });
  const start = recordedHarnessStart(o.sessionUid, parsed, ex, o.signal);
  let error = preferPark(await runHarness(() => served.harness.run(start, sink), o.signal), sink.latched);
  sink.seal();
  error ??= sink.leftover();
  return { kind: "redriven", outcome: concludeTurn(writer, ex.id, o.signal, error) };
}

const UNRESOLVED = new Set([EventKind.EVENT_TOOL_CALL, EventKind.EVENT_APPROVAL_REQUEST, EventKind.EVENT_APPROVAL_RESULT]);

/**
 * The seq of a tool intent (or gate) copied from a fork parent and left without a receipt: the
 * execution's last effect is unresolved and sits before this session's latest FORK marker.
 */
export function inheritedIntent(parsed: Extract<ParsedLog, { ok: true }>, ex: Execution): bigint | undefined {
  const last = ex.effects[ex.effects.length - 1];
  if (!last || !UNRESOLVED.has(last.event.kind)) return undefined;
  return last.seq < parsed.lastForkSeq ? last.seq : undefined;
}
