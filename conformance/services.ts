/**
 * The services a step can call, all on the host's one Connect endpoint. `call: Exec` names a method
 * of the contract's Sessions service; `call: Audit.Verify` names one of another service by its short
 * name. Resolved when the cases load, so a misspelt method fails the load instead of one case.
 * Internal to conformance/ (@internal).
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Audit } from "../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { Sessions } from "../proto/gen/agentsessions/v1/session_pb.js";

/** Short name → service. Sessions is the contract; Audit is this project's extension (audit.proto). */
export const SERVICES: ReadonlyMap<string, DescService> = new Map<string, DescService>([
  ["Sessions", Sessions],
  ["Audit", Audit],
]);

/** `Method` (a Sessions method) or `Service.Method`, as a step's `call` spells it. */
export function resolveMethod(call: string): DescMethod {
  const dot = call.lastIndexOf(".");
  const serviceName = dot < 0 ? "Sessions" : call.slice(0, dot);
  const methodName = call.slice(dot + 1);
  const service = SERVICES.get(serviceName);
  if (!service) throw new Error(`no service ${serviceName} (known: ${[...SERVICES.keys()].join(", ")})`);
  const method = service.methods.find((m) => m.name === methodName);
  if (!method) throw new Error(`no method ${methodName} on ${service.typeName} (it has ${service.methods.map((m) => m.name).join(", ")})`);
  return method;
}

/** Sessions.ListSessions: the one method `pages: true` can follow. */
export function isListSessions(m: DescMethod): boolean {
  return m.parent.typeName === Sessions.typeName && m.name === "ListSessions";
}

/** Sessions.Exec: its frames are ExecUpdates, not bare LogRecords. */
export function isExec(m: DescMethod): boolean {
  return m.parent.typeName === Sessions.typeName && m.name === "Exec";
}
