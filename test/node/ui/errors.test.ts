/**
 * Errors as the inspector words them (ui/errors.ts): the server's message without advice meant for
 * the command line, what to do in the page instead, and ERROR record codes in plain words.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { codeInWords, errorLine, personError } from "../../../ui/errors.js";

describe("errors in the browser", () => {
  it("personError: an unauthenticated answer loses its agentctl hint and says where the token goes", () => {
    const e = new ConnectError("an API key is required: send Authorization: Bearer <token> (agentctl: --token or AGENTSESSIONS_TOKEN)", Code.Unauthenticated);
    const p = personError(e);
    expect(p).toEqual({
      code: "unauthenticated",
      message: "an API key is required: send Authorization: Bearer <token>",
      advice: "Paste a bearer token into the Token field at the top of the page.",
    });
    expect(errorLine("Listing sessions", e)).not.toMatch(/--token|AGENTSESSIONS_TOKEN|agentctl/);
  });

  it("personError: no answer at all is a network failure with advice for the page, not a Connect code", () => {
    const e = new ConnectError("Failed to fetch", Code.Unknown, undefined, undefined, new TypeError("Failed to fetch"));
    expect(personError(e)).toMatchObject({ code: "network", advice: "Is the host running? The page keeps trying on its own." });
  });

  it("personError: a refusal keeps the server's message, which says what to do", () => {
    const e = new ConnectError("no tool executor configured on this host (set TOOL_EXECUTOR_URL)", Code.FailedPrecondition);
    expect(errorLine("Resume", e)).toBe("Resume failed: failed_precondition: no tool executor configured on this host (set TOOL_EXECUTOR_URL)");
  });

  it("codeInWords: an ERROR record's code is named and explained", () => {
    expect(codeInWords(Code.Internal)).toBe("internal: the harness or the model failed during the turn");
    expect(codeInWords(Code.DeadlineExceeded)).toBe("deadline_exceeded: the turn's deadline passed before it finished");
    expect(codeInWords(99)).toBe("code 99");
  });
});
