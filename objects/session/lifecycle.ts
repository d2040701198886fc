/**
 * Session-scoped LIFECYCLE records (no execution id): SUSPEND, RESUME, FORK, CANCEL.
 */
import { create } from "@bufbuild/protobuf";
import { EventKind, EventSchema, type Event, type Lifecycle, Lifecycle_Kind } from "../../proto/gen/agentsessions/v1/common_pb.js";

export function lifecycleEvent(kind: Lifecycle_Kind, fields: Partial<Omit<Lifecycle, "$typeName" | "kind">> = {}): Event {
  return create(EventSchema, { kind: EventKind.EVENT_LIFECYCLE, body: { case: "lifecycle", value: { ...fields, kind } } });
}

export { Lifecycle_Kind };
