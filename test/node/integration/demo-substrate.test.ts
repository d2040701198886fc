/**
 * `npm run demo:substrate` (scripts/demo-substrate.ts) in CI: its whole run, against a real
 * `wrangler dev`, the bridge and the stand-in ateapi, takes seconds here. It prints one line per
 * step and ends with the summary line; everything it started is gone afterwards (the node
 * project's leak check fails the run on a process or temp file left behind).
 */
import { expect, it } from "vitest";
import { runSubstrateDemo } from "../../../scripts/demo-substrate.js";

it("demo:substrate: runs exec, exec, suspend, resume, exec, fork --count 3 and an exec on each child, verifies every chain and prints the summary line (checklist §8.18 #194)", {
  timeout: 180_000,
}, async () => {
  const lines: string[] = [];
  const result = await runSubstrateDemo((l) => lines.push(l));
  expect(result).toEqual({ counter: [1, 2, 3], children: [4, 4, 4], verified: 5 });
  expect(lines.every((l) => l.startsWith("demo:substrate "))).toBe(true);
  const steps = lines.map((l) => l.replace(/^demo:substrate /, "").split(" → ")[0]);
  expect(steps.slice(1, -1)).toEqual([
    "create",
    "exec",
    "exec",
    "suspend",
    "resume",
    "exec",
    "verify parent",
    "fork --count 3",
    "exec child 1",
    "exec child 2",
    "exec child 3",
    "verify parent after the fork",
    "verify child 1",
    "verify child 2",
    "verify child 3",
  ]);
  expect(lines.at(-1)).toBe("demo:substrate ok counter=1,2,3 children=4,4,4 verified=5");
});
