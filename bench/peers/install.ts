/**
 * Installs the peers on demand: `npm ci` in bench/peers when its node_modules is missing or was
 * installed from another package-lock.json (a stamp of the lockfile's hash is kept beside it).
 * Nothing here touches the project's own node_modules.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const STAMP = ".bench-peers-lock.sha256";

export function lockHash(dir: string): string {
  return createHash("sha256")
    .update(readFileSync(join(dir, "package-lock.json")))
    .digest("hex");
}

/** Whether the peers in `dir` must be (re)installed. */
export function peersStale(dir: string): boolean {
  const stamp = join(dir, "node_modules", STAMP);
  return !existsSync(stamp) || readFileSync(stamp, "utf8").trim() !== lockHash(dir);
}

export function ensurePeersInstalled(dir: string, log: (line: string) => void): void {
  if (!peersStale(dir)) return;
  log("installing the peers: npm ci in bench/peers (first run, or package-lock.json changed; compiling better-sqlite3 takes a minute) …");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(npm, ["ci", "--no-audit", "--no-fund", "--loglevel", "error"], { cwd: dir, stdio: "inherit" });
  if (r.status !== 0) throw new Error(`npm ci in ${dir} failed (exit ${r.status}); run it there by hand to see why`);
  writeFileSync(join(dir, "node_modules", STAMP), lockHash(dir) + "\n");
  log("peers installed");
}
