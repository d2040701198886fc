/**
 * Fork fan-out (BEHAVIOUR.md §4.7), orchestrated by the Worker because it spans many Durable
 * Objects: validate, ask the parent for its fork point, begin every child, copy the parent's
 * prefix in pages (one read per page, fanned out to all children in parallel), seal each child
 * with its FORK marker, then register the whole fan-out in the Directory at once. Any failure
 * discards every child: a refused or failed fork leaves no phantom sessions.
 *
 * A memory fork (a harness on the memory tier: objects/session/memory-fork.ts) has one more step
 * between the copy and the seal: the parent checkpoints itself and clones every child from that
 * snapshot (`forkClone`). Nothing is visible until the seal, and a seal or registration that fails
 * after the clones exist stops them (`forkRelease`) before the children are discarded.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { SessionSchema, type ForkRequest, type Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../proto/ids.js";
import { directoryStub, sessionStub, type Env, type Failure } from "../objects/index.js";
import { connectErrorFrom } from "./errors.js";

export const MAX_FORK_CHILDREN = 128;
/** Records per copy page; the parent also caps each page at about 4 MiB. */
const PAGE = 1000;

export async function forkSession(env: Env, tenant: string, parentUid: string, req: ForkRequest, requestId = ""): Promise<Session[]> {
  const count = req.count <= 0 ? 1 : req.count;
  const parent = sessionStub(env, tenant, parentUid);
  const source = await parent.forkSource(req.atSeq, requestId);
  if (!source.ok) throw connectErrorFrom(source);
  const { atSeq, statics, states, memory } = source.value;
  const inherited = fromBinary(SessionSchema, statics);

  const uids = Array.from({ length: count }, () => mintSessionUid());
  const children = uids.map((uid) => sessionStub(env, tenant, uid));
  const childStatics = (i: number) =>
    toBinary(
      SessionSchema,
      create(SessionSchema, {
        metadata: { project: inherited.metadata?.project ?? "", name: req.childNames[i] ?? "" },
        harness: inherited.harness,
        model: inherited.model,
        annotations: inherited.annotations,
        origin: inherited.origin,
        labels: req.labels,
        parentUid,
        forkSeq: atSeq,
      }),
    );
  // Seals every child with its FORK marker, then lists the whole fan-out at once.
  const seal = async (cloned: boolean): Promise<Session[]> => {
    const sealed = must(await Promise.all(children.map((c) => c.forkFinish(atSeq, states, cloned))));
    await directoryStub(env, tenant).upsertMany(sealed.map((s) => s.row));
    return sealed.map((s) => fromBinary(SessionSchema, s.session));
  };
  try {
    must(await Promise.all(children.map((c, i) => c.forkBegin(tenant, uids[i]!, childStatics(i)))));
    for (let from = 1n; from <= atSeq; ) {
      const page = await parent.read(from, atSeq, PAGE);
      if (!page.ok) throw connectErrorFrom(page);
      if (page.value.length === 0) throw new ConnectError(`the parent's journal ends before seq ${from}: retry the fork`, Code.Aborted);
      must(await Promise.all(children.map((c) => c.forkSeed(page.value))));
      from = page.value[page.value.length - 1]!.seq + 1n;
    }
    if (!memory) return await seal(false);
    const cloned = await parent.forkClone(atSeq, uids, requestId);
    if (!cloned.ok) throw connectErrorFrom(cloned);
    try {
      return await seal(true);
    } catch (e) {
      await parent.forkRelease(uids, requestId).catch(() => undefined);
      throw e;
    }
  } catch (e) {
    await Promise.allSettled(children.map((c) => c.forkDiscard()));
    throw e;
  }
}

function must<T>(results: ({ ok: true; value: T } | Failure)[]): T[] {
  const failed = results.find((r): r is Failure => !r.ok);
  if (failed) throw connectErrorFrom(failed);
  return results.map((r) => (r as { value: T }).value);
}
