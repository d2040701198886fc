/**
 * Branches in the inspector (ui/branches.ts): the fork tree at any depth with the fork seq on each
 * edge, and where two branches diverge after their common prefix.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { type Session, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { branchNodes, branchTree, compareBranches } from "../../../ui/branches.js";
import { ev, journal } from "./records.js";

function session(uid: string, parentUid = "", forkSeq = 0n, name = uid, createSeconds = 0n): Session {
  return create(SessionSchema, { metadata: { uid, name, createTime: { seconds: createSeconds } }, parentUid, forkSeq });
}

describe("branch tree", () => {
  it("branchTree: children, grandchildren and great-grandchildren under the root, ordered by fork seq then creation", () => {
    const sessions = [
      session("root"),
      session("b", "root", 9n, "b", 5n),
      session("a", "root", 5n, "a", 6n),
      session("a2", "root", 5n, "a2", 6n),
      session("a-child", "a", 11n),
      session("a-grandchild", "a-child", 13n),
      session("elsewhere"),
    ];
    const tree = branchTree(sessions, "root")!;
    const shape = (n: typeof tree): unknown => [n.uid, n.forkSeq, n.children.map(shape)];
    expect(shape(tree)).toEqual([
      "root",
      0n,
      [
        ["a", 5n, [["a-child", 11n, [["a-grandchild", 13n, []]]]]],
        ["a2", 5n, []],
        ["b", 9n, []],
      ],
    ]);
    expect(branchNodes(tree).map((n) => n.uid)).toEqual(["root", "a", "a-child", "a-grandchild", "a2", "b"]);
    expect(branchTree(sessions, "missing")).toBeUndefined();
  });
});

describe("branch comparison", () => {
  const prefix = [ev.start("e1"), ev.input("e1", "hi"), ev.output("e1", "hello"), ev.end("e1")];
  const fork = ev.lifecycle(Lifecycle_Kind.LIFECYCLE_FORK, "parent@4");

  it("compareBranches: siblings share the prefix and their fork marker, then diverge at their first own record", () => {
    const left = journal([...prefix, fork, ev.start("l"), ev.input("l", "left")]);
    const right = journal([...prefix, fork, ev.start("r"), ev.input("r", "right"), ev.end("r")]);
    // Same records, same hashes up to the marker; each side's own turn hashes differently.
    for (const r of right.slice(5)) r.contentHash = "r" + r.contentHash;
    for (const r of left.slice(5)) r.contentHash = "l" + r.contentHash;
    const c = compareBranches(left, right);
    expect(c.common.map((r) => Number(r.seq))).toEqual([1, 2, 3, 4, 5]);
    expect(c.divergesAt).toBe(6n);
    expect(c.a.map((r) => Number(r.seq))).toEqual([6, 7]);
    expect(c.b.map((r) => Number(r.seq))).toEqual([6, 7, 8]);
  });

  it("compareBranches: a child against its parent diverges at the fork marker; identical journals do not diverge", () => {
    const parent = journal([...prefix, ev.start("e2")]);
    const child = journal([...prefix, fork]);
    child[4]!.contentHash = "fork-marker";
    expect(compareBranches(parent, child)).toMatchObject({ divergesAt: 5n, common: parent.slice(0, 4) });
    expect(compareBranches(parent, parent.slice(0, 4))).toMatchObject({ divergesAt: 5n, b: [] });
    expect(compareBranches(parent, parent).divergesAt).toBeUndefined();
  });
});
