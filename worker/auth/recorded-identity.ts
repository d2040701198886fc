/**
 * Identity is what authentication established, never what a client claims (docs/design.md §6). With an
 * authenticated principal, `Session.identity` and an Approve's `actor` are that principal; a
 * request naming anyone else is refused. With AUTH_MODE=none there is no one to vouch for, so a
 * supplied identity is recorded as the contract's provenance, as the reference does.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { IdentityRefSchema, type IdentityRef } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { identityOf, type Principal } from "./principal.js";

export function recordedIdentity(p: Principal, supplied: IdentityRef | undefined, field: string): IdentityRef | undefined {
  const given = supplied && (supplied.principal || supplied.issuer || supplied.subject) ? supplied : undefined;
  const own = identityOf(p);
  if (!own) return given;
  if (given && (given.principal !== own.principal || given.issuer !== own.issuer || given.subject !== own.subject)) {
    throw new ConnectError(
      `${field} must be omitted or be your own authenticated identity (${own.principal}): the host records who authenticated`,
      Code.PermissionDenied,
    );
  }
  return create(IdentityRefSchema, own);
}
