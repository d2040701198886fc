/**
 * Authorization: the role each RPC needs. The Worker's front door (worker/rpc-entry.ts) checks it
 * right after authentication, before the request body is read. A method missing from the table
 * needs admin: new RPCs fail closed.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import type { Principal, Role } from "./principal.js";

const ROLE_OF: Record<string, Role> = {
  "agentsessions.v1.Sessions/CreateSession": "write",
  "agentsessions.v1.Sessions/GetSession": "read",
  "agentsessions.v1.Sessions/ListSessions": "read",
  "agentsessions.v1.Sessions/DeleteSession": "write",
  "agentsessions.v1.Sessions/Exec": "write",
  "agentsessions.v1.Sessions/Replay": "read",
  "agentsessions.v1.Sessions/Approve": "approve",
  "agentsessions.v1.Sessions/Cancel": "write",
  "agentsessions.v1.Sessions/Suspend": "write",
  "agentsessions.v1.Sessions/Resume": "write",
  "agentsessions.v1.Sessions/Fork": "write",
  "agentsessions.v1.HarnessRegistry/RegisterHarness": "admin",
  "agentsessions.v1.HarnessRegistry/RetireHarness": "admin",
  "agentsessions.v1.HarnessRegistry/GetHarness": "read",
  "agentsessions.v1.HarnessRegistry/ListHarnesses": "read",
  "agentsessions.edge.v1.EdgeRegistry/RegisterHarness": "admin",
  "agentsessions.edge.v1.EdgeRegistry/GetHarness": "read",
  "agentsessions.edge.v1.Audit/Verify": "read",
  "agentsessions.edge.v1.Blobs/GetBlob": "read",
  "agentsessions.edge.v1.Retention/GetRetention": "read",
  "agentsessions.edge.v1.Retention/SetRetention": "admin",
  "agentsessions.edge.v1.Tail/Tail": "read",
};

export function roleFor(service: string, method: string): Role {
  return ROLE_OF[`${service}/${method}`] ?? "admin";
}

/** Why `principal` may not call `method` (the refusal's message), or undefined when it may. */
export function refuseRole(principal: Principal, method: DescMethod): string | undefined {
  const role = roleFor(method.parent.typeName, method.name);
  if (principal.roles.has(role)) return undefined;
  return `${principal.name} may not call ${method.name}: it needs the ${role} role; ask an admin of tenant ${principal.tenant} for a key that has it`;
}
