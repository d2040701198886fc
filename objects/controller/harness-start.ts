/**
 * The Start a harness runs with (Harness SPI, docs/contract.md), built one way for a live turn
 * (live-turn.ts), a replay (replay.ts) and a recovery (resume.ts). The history is read on first
 * use: a harness that never looks at it costs no journal scan.
 */
import type { Event, Message } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { HarnessStart } from "../../runtimes/harness-spi.js";
import { historyOf, type Execution, type ParsedLog } from "./execution-log.js";

export interface StartValues {
  sessionUid: string;
  executionId: string;
  /** Copied: the harness gets its own bytes, the journaled ones stay as they are. */
  config: Uint8Array;
  inputs: Message[];
  resumeFromSeq: bigint;
  signal: AbortSignal;
  /** Every event before the execution's EXECUTION_START; called at most once. */
  history: () => Event[];
}

export function createHarnessStart(v: StartValues): HarnessStart {
  let history: Event[] | undefined;
  return {
    sessionUid: v.sessionUid,
    executionId: v.executionId,
    config: v.config.slice(),
    inputs: v.inputs,
    resumeFromSeq: v.resumeFromSeq,
    signal: v.signal,
    get history() {
      history ??= v.history();
      return history;
    },
  };
}

/** The Start a recorded execution ran with: every value from the journal, never from the caller. */
export function recordedHarnessStart(sessionUid: string, parsed: Extract<ParsedLog, { ok: true }>, ex: Execution, signal: AbortSignal): HarnessStart {
  return createHarnessStart({
    sessionUid,
    executionId: ex.id,
    config: ex.start.config,
    inputs: ex.inputs,
    resumeFromSeq: ex.start.resumeFromSeq,
    signal,
    history: () => historyOf(parsed, ex),
  });
}
