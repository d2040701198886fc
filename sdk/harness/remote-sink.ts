/**
 * The EventSink a harness gets behind the tunnel: each call becomes the contract's Event on its
 * stream (docs/contract.md §5.3), and model and tool calls wait for the matching ControllerFrame. The
 * same harness code runs here and in process (runtimes/builtin) unchanged.
 * @internal Used by stream.ts.
 */
import { create } from "@bufbuild/protobuf";
import { EventKind, Lifecycle_Kind, LifecycleSchema, MessageSchema, ModelCallSchema, type ToolResult } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { ModelResult } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { randomHex } from "../../proto/ids.js";
import { assistantText } from "../../proto/messages.js";
import { COMPACTION_REQUEST_DETAIL } from "../../runtimes/compaction.js";
import type { EventSink, ModelRequest, ModelResponse } from "../../runtimes/harness-spi.js";
import type { TunnelStream } from "./stream.js";

export function createRemoteSink(stream: TunnelStream): EventSink {
  const model = async (req: ModelRequest): Promise<ModelResponse> => {
    // A fresh correlation id per call; the host journals its own id and echoes ours back.
    const id = randomHex(8);
    const call = create(ModelCallSchema, {
      model: req.model,
      params: req.params ?? {},
      id,
      messages: req.messages,
      tools: req.tools ?? [],
      toolChoice: req.toolChoice,
    });
    const r = await stream.request<ModelResult>(EventKind.EVENT_MODEL_CALL, { case: "model", value: call }, (resolve, reject) => ({
      kind: "model",
      id,
      resolve,
      reject,
    }));
    return { message: r.message ?? create(MessageSchema, { role: "assistant" }), usage: r.usage };
  };
  return {
    model,
    // A compaction over the tunnel (docs/tunnel.md "Compaction"): LIFECYCLE(BASELINE) "compaction",
    // then the summary's MODEL_CALL; the host journals the answer as the compaction point.
    async compact(req) {
      await stream.emit(EventKind.EVENT_LIFECYCLE, {
        case: "lifecycle",
        value: create(LifecycleSchema, { kind: Lifecycle_Kind.LIFECYCLE_BASELINE, detail: COMPACTION_REQUEST_DETAIL }),
      });
      return model(req);
    },
    output(text) {
      return stream.emit(EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(text) });
    },
    // ToolCallOptions.approvalTimeoutSeconds has no field on the wire (ToolCall carries none), so
    // behind the tunnel the host's default approval timeout applies.
    toolCall(call) {
      return stream.request<ToolResult>(EventKind.EVENT_TOOL_CALL, { case: "tool", value: call }, (resolve, reject) => ({
        kind: "tool",
        callId: call.id,
        resolve,
        reject,
      }));
    },
    report(result) {
      return stream.emit(EventKind.EVENT_TOOL_RESULT, { case: "result", value: result });
    },
    usage(usage) {
      return stream.emit(EventKind.EVENT_USAGE, { case: "usage", value: usage });
    },
  };
}
