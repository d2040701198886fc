/**
 * Test-only harnesses, served only when the TEST_HARNESSES var is "1" (the fault tests set it;
 * a deployment never does): `hold` and `tools`.
 *
 * `hold`: one mediated model call with the last input's text, then, if the execution config names a
 * `hold_url`, a GET of that URL before returning. A test holds that request open to freeze a live
 * turn right after its OUTPUT is journaled and before END, then kills the server there. The GET is
 * a side channel outside the sink, which is exactly why this harness is not for production.
 */
import { create } from "@bufbuild/protobuf";
import { createHash } from "node:crypto";
import { EventKind, Mediation, ToolCallSchema, ToolResult_Code } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescriptorSchema, Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { textOf, userText } from "../../proto/messages.js";
import type { Harness } from "../harness-spi.js";

export const holdHarness: Harness = {
  describe() {
    return create(HarnessDescriptorSchema, {
      id: "hold",
      version: "1",
      capabilities: { resumability: Resumability.STATELESS_REPLAY },
    });
  },
  async run(start, sink) {
    const config = start.config.length ? (JSON.parse(new TextDecoder().decode(start.config)) as { hold_url?: string; model?: string }) : {};
    await sink.model({ model: config.model ?? "", messages: [userText(textOf(start.inputs[start.inputs.length - 1]))] });
    if (config.hold_url) {
      const res = await fetch(config.hold_url, { signal: start.signal });
      await res.arrayBuffer();
    }
  },
};

interface ScriptedCall {
  id?: string;
  tool: string;
  args?: Record<string, unknown>;
  mediation?: "CONTROLLER_MEDIATED" | "REQUIRES_APPROVAL" | "IN_HARNESS_REPORTED" | "UNSPECIFIED";
  key?: string;
  approval_timeout_seconds?: number;
}

/**
 * `tools`: makes the tool calls its execution config lists, in order, then outputs one line per
 * result (`<tool>: ok|error <code> <text>`). With `"swallow": true` it catches every sink error and
 * carries on (to show that a refused call still fails the turn). With `"digest": true` each line
 * gives the result text's SHA-256 and length instead of the text, and one more line per TOOL_RESULT
 * and OUTPUT in its history (`history <kind>: sha256=<hex> bytes=<n>`): what a test of large parts
 * (docs/blobs.md) needs to see that the harness got every byte, live and from history.
 */
export const toolsHarness: Harness = {
  describe() {
    return create(HarnessDescriptorSchema, { id: "tools", version: "1", capabilities: { resumability: Resumability.STATELESS_REPLAY } });
  },
  async run(start, sink) {
    const config = JSON.parse(new TextDecoder().decode(start.config) || "{}") as { calls?: ScriptedCall[]; swallow?: boolean; digest?: boolean };
    const lines: string[] = [];
    if (config.digest) {
      for (const e of start.history) {
        const b = e.body;
        const parts = b.case === "result" ? b.value.content : b.case === "message" && e.kind === EventKind.EVENT_OUTPUT ? b.value.parts : [];
        const text = parts.map((p) => (p.part.case === "text" ? p.part.value.text : "")).join("");
        if (parts.length > 0) lines.push(`history ${EventKind[e.kind].replace(/^EVENT_/, "").toLowerCase()}: ${digestOf(text)}`);
      }
    }
    for (const [i, c] of (config.calls ?? []).entries()) {
      const call = create(ToolCallSchema, {
        id: c.id ?? `call-${i}`,
        tool: c.tool,
        args: c.args as never,
        mediation: Mediation[c.mediation ?? "CONTROLLER_MEDIATED"],
        idempotencyKey: c.key ?? `${start.executionId}/${c.id ?? `call-${i}`}`,
      });
      try {
        const r = await sink.toolCall(call, { approvalTimeoutSeconds: c.approval_timeout_seconds });
        const text = r.content.map((p) => (p.part.case === "text" ? p.part.value.text : "")).join("");
        lines.push(`${c.tool}: ${r.isError ? "error" : "ok"} ${ToolResult_Code[r.code]} ${config.digest ? digestOf(text) : text}`.trim());
      } catch (e) {
        if (!config.swallow) throw e;
        lines.push(`${c.tool}: refused`);
      }
    }
    await sink.output(lines.join("\n"));
  },
};

function digestOf(text: string): string {
  const data = new TextEncoder().encode(text);
  return `sha256=${createHash("sha256").update(data).digest("hex")} bytes=${data.length}`;
}
