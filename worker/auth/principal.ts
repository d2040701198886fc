/**
 * Who is calling: the authenticated principal, its tenant and its roles. Roles are coarse on
 * purpose (docs/security.md): read, write, approve, harness, admin. `write` implies `read`;
 * `admin` implies every role.
 */
import type { IdentityRef } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { TenantId } from "../../proto/ids.js";

export const ROLES = ["read", "write", "approve", "harness", "admin"] as const;
export type Role = (typeof ROLES)[number];

export interface Principal {
  tenant: TenantId;
  /** The name recorded as `IdentityRef.principal` (a key's principal, a JWT's principal claim). */
  name: string;
  /** Who vouched for it: `apikey`, the JWT issuer, or `local` when authentication is off. */
  issuer: string;
  /** The key id or the JWT `sub`. */
  subject: string;
  roles: ReadonlySet<Role>;
  /** True when AUTH_MODE is none: there is no authenticated identity to record. */
  anonymous: boolean;
}

export function isRole(s: string): s is Role {
  return (ROLES as readonly string[]).includes(s);
}

/** The roles a principal holds, with the implied ones added; unknown role names are dropped. */
export function rolesFrom(names: readonly string[]): Set<Role> {
  const roles = new Set<Role>(names.filter(isRole));
  if (roles.has("admin")) for (const r of ROLES) roles.add(r);
  if (roles.has("write")) roles.add("read");
  return roles;
}

/** The identity a principal's actions are recorded under; undefined when it is anonymous. */
export function identityOf(p: Principal): Pick<IdentityRef, "principal" | "issuer" | "subject"> | undefined {
  return p.anonymous ? undefined : { principal: p.name, issuer: p.issuer, subject: p.subject };
}
