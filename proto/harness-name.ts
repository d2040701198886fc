/**
 * The one rule for harness names (docs/tunnel.md "Names"): a registry name is an RFC 1123 DNS
 * label, 1 to 63 lowercase letters, digits and '-', not starting or ending with '-'. The host
 * (registry, tunnel route, session creation), the harness SDK and the CLI all import it from here,
 * so what one accepts the other never refuses. Tested in test/node/proto/harness-name.test.ts.
 */
const HARNESS_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The rule in words, for messages that say what to do next. */
export const HARNESS_NAME_RULE = "at most 63 lowercase letters, digits and '-', not starting or ending with '-'";

export function isHarnessName(s: string): boolean {
  return HARNESS_NAME_RE.test(s);
}
