/**
 * The variables the host reads, from the source of truth (`interface ConfigEnv` in
 * objects/config.ts), and which of them its doc comments call secrets. Documents that list the
 * variables (docs/deploy.md, .dev.vars.example) are tested against it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../../../scripts/dev-server.js";

export function configEnv(): { vars: string[]; secrets: string[] } {
  const body = /export interface ConfigEnv \{([\s\S]*?)\n\}/.exec(readFileSync(join(ROOT, "objects/config.ts"), "utf8"))?.[1] ?? "";
  const vars: string[] = [];
  const secrets: string[] = [];
  let comment = "";
  for (const line of body.split("\n")) {
    const one = /^\s*\/\*\*(.*)\*\/\s*$/.exec(line);
    const open = /^\s*\/\*\*(.*)$/.exec(line);
    if (one) comment = one[1]!.trim();
    else if (open) comment = open[1]!.trim() || "…";
    else if (/^\s*\*\s/.test(line) && comment === "…") comment = line.replace(/^\s*\*\s*/, "");
    const m = /^\s*([A-Z0-9_]+)\?: string;/.exec(line);
    if (m) {
      vars.push(m[1]!);
      if (/^Secret\b/.test(comment)) secrets.push(m[1]!);
      comment = "";
    }
  }
  return { vars, secrets };
}
