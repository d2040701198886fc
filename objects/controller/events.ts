/**
 * Constructors for the host-written records of an execution and of the session's lifecycle.
 */
import { create } from "@bufbuild/protobuf";
import type { Code } from "@connectrpc/connect";
import { EventKind, EventSchema, Lifecycle_Kind, type Event, type Lifecycle, type Message } from "../../proto/gen/agentsessions/v1/common_pb.js";

export function inputEvent(executionId: string, message: Message): Event {
  return create(EventSchema, { executionId, kind: EventKind.EVENT_INPUT, body: { case: "message", value: message } });
}

export function endEvent(executionId: string, state: "COMPLETED" | "CANCELED"): Event {
  return create(EventSchema, { executionId, kind: EventKind.EVENT_END, body: { case: "end", value: { state } } });
}

export function errorEvent(executionId: string, code: Code, description: string): Event {
  return create(EventSchema, { executionId, kind: EventKind.EVENT_ERROR, body: { case: "error", value: { code, description } } });
}

/** Session-scoped LIFECYCLE records carry no execution id. */
export function lifecycleEvent(kind: Lifecycle_Kind, fields: Partial<Omit<Lifecycle, "$typeName" | "kind">> = {}): Event {
  return create(EventSchema, { kind: EventKind.EVENT_LIFECYCLE, body: { case: "lifecycle", value: { ...fields, kind } } });
}

export { Lifecycle_Kind };
