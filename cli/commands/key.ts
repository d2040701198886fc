/**
 * `agentctl key new`: mints an API key for AUTH_MODE=keys (docs/security.md). Offline: prints the
 * key once (give it to its holder; it is never stored) and the AUTH_KEYS entry that carries only
 * its SHA-256, to add to the deployment's secret.
 */
import { createHash, randomBytes } from "node:crypto";
import { parseTenantId } from "../../proto/ids.js";
import { ROLES, isRole } from "../../worker/auth/principal.js";
import { UsageError } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";

export const keyCommand: Command = {
  name: "key",
  summary: "mint an API key and its AUTH_KEYS entry (offline)",
  synopsis: "key new --tenant T --principal P --roles R[,R...] [--id ID]",
  help: [
    "--tenant T       the tenant the key acts in (lowercase letters, digits, '.', '_', '-')",
    "--principal P    the name recorded as the identity of everything the key does",
    `--roles R,...    any of ${ROLES.join(", ")} (write implies read, admin implies all)`,
    "--id ID          a label for the key in logs and rotation (default: random)",
  ],
  flags: { tenant: "string", principal: "string", roles: "string", id: "string" },

  async run(ctx, args) {
    if (args.positionals.length !== 1 || args.positionals[0] !== "new")
      throw new UsageError("usage: agentctl key new --tenant T --principal P --roles R[,R...]");
    const tenant = parseTenantId(args.strings.get("tenant") ?? "");
    if (!tenant) throw new UsageError("--tenant T is required: lowercase letters, digits, '.', '_' or '-', at most 63");
    const principal = args.strings.get("principal") ?? "";
    if (!principal) throw new UsageError("--principal P is required");
    const roles = (args.strings.get("roles") ?? "")
      .split(",")
      .map((r) => r.trim())
      .filter(Boolean);
    const unknown = roles.filter((r) => !isRole(r));
    if (roles.length === 0 || unknown.length > 0)
      throw new UsageError(`--roles takes a comma-separated list of ${ROLES.join(", ")}${unknown.length ? ` (not: ${unknown.join(", ")})` : ""}`);
    const key = `ask_${randomBytes(24).toString("base64url")}`;
    const id = args.strings.get("id") || `key-${randomBytes(4).toString("hex")}`;
    const entry = { id, sha256: createHash("sha256").update(key).digest("hex"), tenant, principal, roles };
    if (ctx.json) {
      writeJsonLine(ctx, { key, entry });
    } else {
      ctx.out.write(`key ${key}\n`);
      ctx.out.write(`entry ${JSON.stringify(entry)}\n`);
      ctx.err.write("the key is shown once: hand it over now; add the entry to the AUTH_KEYS list (wrangler secret put AUTH_KEYS)\n");
    }
    return 0;
  },
};
