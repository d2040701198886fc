/**
 * Branches: the fork tree of sessions (any depth, each edge carrying the fork seq) and the
 * comparison of two branches from their common prefix. Forks copy the parent's records verbatim
 * (docs/lifecycle.md), so two journals agree exactly as long as their content hashes do, and the
 * first seq where the hashes differ is where they diverge. Pure; tested in
 * test/node/ui/branches.test.ts.
 */
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";

export interface BranchNode {
  session: Session;
  uid: string;
  /** The parent's seq this branch starts after (0n for the root). */
  forkSeq: bigint;
  children: BranchNode[];
}

/**
 * The tree under `rootUid` from a set of sessions (children ordered by fork seq, then creation).
 * A session whose parent is not in the set is not reachable from the root.
 */
export function branchTree(sessions: readonly Session[], rootUid: string): BranchNode | undefined {
  const byParent = new Map<string, Session[]>();
  let root: Session | undefined;
  for (const s of sessions) {
    const uid = s.metadata?.uid ?? "";
    if (uid === rootUid) root = s;
    if (s.parentUid) byParent.set(s.parentUid, [...(byParent.get(s.parentUid) ?? []), s]);
  }
  if (!root) return undefined;
  const seen = new Set<string>();
  const grow = (s: Session): BranchNode => {
    const uid = s.metadata?.uid ?? "";
    seen.add(uid);
    const kids = (byParent.get(uid) ?? []).filter((c) => !seen.has(c.metadata?.uid ?? "")).sort(byForkThenCreation);
    return { session: s, uid, forkSeq: uid === rootUid ? 0n : s.forkSeq, children: kids.map(grow) };
  };
  return grow(root);
}

function byForkThenCreation(a: Session, b: Session): number {
  if (a.forkSeq !== b.forkSeq) return a.forkSeq < b.forkSeq ? -1 : 1;
  const at = a.metadata?.createTime;
  const bt = b.metadata?.createTime;
  const ta = (at?.seconds ?? 0n) * 1_000_000_000n + BigInt(at?.nanos ?? 0);
  const tb = (bt?.seconds ?? 0n) * 1_000_000_000n + BigInt(bt?.nanos ?? 0);
  if (ta !== tb) return ta < tb ? -1 : 1;
  // Children of one fork share a creation time: their names (then uids) order them.
  const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return order(a.metadata?.name ?? "", b.metadata?.name ?? "") || order(a.metadata?.uid ?? "", b.metadata?.uid ?? "");
}

/** Every node of the tree, depth first. */
export function branchNodes(root: BranchNode): BranchNode[] {
  return [root, ...root.children.flatMap(branchNodes)];
}

export interface Comparison {
  /** Records both journals hold identically, from seq 1. */
  common: LogRecord[];
  /** The first seq at which they differ (or one ends); undefined when they are identical. */
  divergesAt?: bigint;
  /** Each side's records after the common prefix. */
  a: LogRecord[];
  b: LogRecord[];
}

export function compareBranches(a: readonly LogRecord[], b: readonly LogRecord[]): Comparison {
  let n = 0;
  while (n < a.length && n < b.length && a[n]!.seq === b[n]!.seq && a[n]!.contentHash === b[n]!.contentHash) n++;
  const identical = n === a.length && n === b.length;
  return {
    common: a.slice(0, n),
    divergesAt: identical ? undefined : BigInt(n + 1),
    a: a.slice(n),
    b: b.slice(n),
  };
}
