/**
 * Authorization: the role each RPC needs, and the interceptor that enforces it. Authentication ran
 * in the fetch entry (it is async and needs the raw request); its outcome rides in the context
 * values, and this interceptor turns a refusal into the Connect error of whatever protocol the
 * client speaks. A method missing from the table needs admin: new RPCs fail closed.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { callerKey } from "../context.js";
import type { Role } from "./principal.js";

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
  "agentsessions.edge.v1.Audit/Verify": "read",
};

export function roleFor(service: string, method: string): Role {
  return ROLE_OF[`${service}/${method}`] ?? "admin";
}

export const authorize: Interceptor = (next) => async (req) => {
  const caller = req.contextValues.get(callerKey);
  if (!caller.principal) {
    const r = caller.refusal ?? { code: Code.Unauthenticated, message: "not authenticated" };
    throw new ConnectError(r.message, r.code);
  }
  const role = roleFor(req.service.typeName, req.method.name);
  if (!caller.principal.roles.has(role)) {
    throw new ConnectError(
      `${caller.principal.name} may not call ${req.method.name}: it needs the ${role} role; ask an admin of tenant ${caller.principal.tenant} for a key that has it`,
      Code.PermissionDenied,
    );
  }
  return next(req);
};
