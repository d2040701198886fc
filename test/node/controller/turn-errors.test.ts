/**
 * A turn's error is classified once (objects/controller/errors.ts `classifyTurnError`): the code its
 * ERROR record carries and the reason the caller is told must be the same decision, so the wire
 * code (worker/errors.ts `codeFor`) always equals the journaled one.
 */
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  AppendRefusedError,
  classifyTurnError,
  MissingToolExecutorError,
  ReplayDivergedError,
  ToolCallRefusedError,
  TurnInterruptedError,
} from "../../../objects/controller/errors.js";
import { turnFailure } from "../../../objects/session/failures.js";
import { codeFor } from "../../../worker/errors.js";

const cases: [string, unknown, Code, string][] = [
  ["deadline", new TurnInterruptedError("deadline", "the turn's deadline_unix passed"), Code.DeadlineExceeded, "deadline_exceeded"],
  ["cancel", new TurnInterruptedError("canceled", "canceled by the caller", "USER"), Code.Canceled, "canceled"],
  ["divergence", new ReplayDivergedError(3n, "the harness asked for another tool"), Code.FailedPrecondition, "replay_diverged"],
  ["no executor", new MissingToolExecutorError(), Code.FailedPrecondition, "missing_executor"],
  ["refused call", new ToolCallRefusedError("missing_key", "no idempotency key"), Code.Internal, "turn_failed"],
  ["stale fence", new AppendRefusedError({ ok: false, reason: "fenced", fence: 1n, current: 2n }), Code.Aborted, "fenced"],
  ["CAS conflict", new AppendRefusedError({ ok: false, reason: "conflict", expected: 1n, head: 4n }), Code.Aborted, "cas_conflict"],
  ["anything else", new Error("model exploded"), Code.Internal, "turn_failed"],
  ["a thrown string", "boom", Code.Internal, "turn_failed"],
];

describe("classifyTurnError", () => {
  for (const [what, error, code, reason] of cases) {
    it(`classifyTurnError: ${what} is ${Code[code]} and ${reason}, and the wire says the same code`, () => {
      const c = classifyTurnError(error);
      expect(c).toMatchObject({ code, reason });
      expect(c.message).toBe(error instanceof Error ? error.message : String(error));
      expect(codeFor(c.reason)).toBe(c.code);
    });
  }

  it("turnFailure: reports the reason the turn was classified with, not one guessed from its code", () => {
    // Both are FAILED_PRECONDITION in the journal; only the classification tells them apart.
    const diverged = turnFailure({ kind: "failed", ...classifyTurnError(new ReplayDivergedError(2n, "x")) });
    const missing = turnFailure({ kind: "failed", ...classifyTurnError(new MissingToolExecutorError()) });
    expect(diverged).toMatchObject({ reason: "replay_diverged", message: expect.stringMatching(/no longer matches the journal/) });
    expect(missing).toMatchObject({ reason: "missing_executor", message: expect.stringMatching(/configure TOOL_EXECUTOR_URL, then Resume$/) });
  });
});
