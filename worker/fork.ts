/**
 * Fork fan-out (docs/behaviour.md §4.7), orchestrated by the Worker because it spans many Durable
 * Objects: validate, ask the parent for its fork point, read the parent's prefix once, packed
 * (objects/journal/record-pack.ts), then build each child (begin, seed, seal with its FORK marker)
 * in as few calls as the 32 MiB call limit allows (one for most prefixes), sixteen children at a
 * time, and register the whole fan-out in the Directory at once. Any failure discards every
 * child: a refused or failed fork leaves no phantom sessions.
 *
 * A memory fork (a harness on the memory tier: objects/session/memory-fork.ts) has one more step
 * between the copy and the seal: the parent checkpoints itself and clones every child from that
 * snapshot (`forkClone`). Nothing is visible until the seal, and a seal or registration that fails
 * after the clones exist stops them (`forkRelease`) before the children are discarded.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { decodeBinary } from "../proto/binary-reader.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { SessionSchema, type ForkRequest, type Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import type { Sha256Hex } from "../proto/blob-ref.js";
import { mintSessionUid } from "../proto/ids.js";
import type { DirectoryRow } from "../objects/directory/directory-store.js";
import { directoryStub, sessionStub, type Env, type Failure } from "../objects/index.js";
import { connectErrorFrom } from "./errors.js";

/** Bytes of packed prefix per read from the parent. */
const PACK_BYTES = 8 * 1024 * 1024;
/** Bytes of prefix per call to a child: under Durable Object RPC's 32 MiB, with room to spare. */
const CALL_BYTES = 24 * 1024 * 1024;
/** Children built at once: each call carries the prefix, so this bounds the memory in flight. */
const CHILDREN_AT_ONCE = 16;

export async function forkSession(env: Env, tenant: string, parentUid: string, req: ForkRequest, requestId = ""): Promise<Session[]> {
  const count = req.count <= 0 ? 1 : req.count;
  const parent = sessionStub(env, tenant, parentUid);
  const source = await parent.forkSource(req.atSeq, requestId);
  if (!source.ok) throw connectErrorFrom(source);
  const { atSeq, statics, states, memory, blobs } = source.value;
  const inherited = decodeBinary(SessionSchema, statics);

  const uids = Array.from({ length: count }, () => mintSessionUid());
  const children = uids.map((uid) => sessionStub(env, tenant, uid));
  // Children share the parent's blobs (no copy): each owns them before it holds a record naming
  // them, so deleting the parent meanwhile cannot erase them (docs/blobs.md "Forks").
  const directory = directoryStub(env, tenant);
  if (blobs.length > 0) await directory.ownBlobs(uids, blobs as Sha256Hex[]);
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
  // The parent's prefix, packed (objects/journal/record-pack.ts), read once for every child.
  const packs: Uint8Array[] = [];
  for (let from = 1n; from <= atSeq; ) {
    const page = await parent.readPacked(from, atSeq, PACK_BYTES);
    if (!page.ok) throw connectErrorFrom(page);
    if (page.value.last < from) throw new ConnectError(`the parent's journal ends before seq ${from}: retry the fork`, Code.Aborted);
    packs.push(page.value.pack);
    from = page.value.last + 1n;
  }
  // Each child in as few calls as the 32 MiB call limit allows: begun with the first batch of the
  // prefix, sealed with the last (one call for most prefixes).
  const batches: Uint8Array[][] = [[]];
  let batchBytes = 0;
  for (const p of packs) {
    if (batchBytes > 0 && batchBytes + p.length > CALL_BYTES) {
      batches.push([]);
      batchBytes = 0;
    }
    batches[batches.length - 1]!.push(p);
    batchBytes += p.length;
  }
  // One time for every child's FORK marker (objects/session/fork.ts forkFinish).
  const atMs = Date.now();
  const build = (cloned: boolean | undefined) =>
    eachLimited(children, CHILDREN_AT_ONCE, async (c, i) => {
      let sealed: { session: Uint8Array; row: DirectoryRow } | undefined;
      for (let k = 0; k < batches.length; k++) {
        const begin = k === 0 ? { tenant, uid: uids[i]!, statics: childStatics(i) } : undefined;
        const seal = k === batches.length - 1 && cloned !== undefined ? { atSeq, states, cloned, atMs } : undefined;
        const r = await c.forkChild(begin, batches[k]!, seal);
        if (!r.ok) throw connectErrorFrom(r);
        if (r.value !== true) sealed = r.value;
      }
      return sealed;
    });
  try {
    if (!memory) {
      const sealed = (await build(false)) as { session: Uint8Array; row: DirectoryRow }[];
      await directoryStub(env, tenant).upsertMany(sealed.map((s) => s.row));
      return sealed.map((s) => decodeBinary(SessionSchema, s.session));
    }
    // A memory fork: the children's journals first, then the parent's checkpoint and clones, then the seals.
    await build(undefined);
    const cloned = await parent.forkClone(atSeq, uids, requestId);
    if (!cloned.ok) throw connectErrorFrom(cloned);
    try {
      const sealed = must(await Promise.all(children.map((c) => c.forkFinish(atSeq, states, true, atMs))));
      await directoryStub(env, tenant).upsertMany(sealed.map((s) => s.row));
      return sealed.map((s) => decodeBinary(SessionSchema, s.session));
    } catch (e) {
      await parent.forkRelease(uids, requestId).catch(() => undefined);
      throw e;
    }
  } catch (e) {
    await Promise.allSettled(children.map((c) => c.forkDiscard()));
    if (blobs.length > 0) await Promise.allSettled(uids.map((uid) => directory.releaseBlobs(tenant, uid)));
    throw e;
  }
}

/** Runs `f` over `items`, at most `n` at once; the first failure fails the whole run. */
async function eachLimited<T, R>(items: readonly T[], n: number, f: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed: unknown;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length && failed === undefined) {
        const i = next++;
        try {
          out[i] = await f(items[i]!, i);
        } catch (e) {
          failed ??= e;
        }
      }
    }),
  );
  if (failed !== undefined) throw failed;
  return out;
}

function must<T>(results: ({ ok: true; value: T } | Failure)[]): T[] {
  const failed = results.find((r): r is Failure => !r.ok);
  if (failed) throw connectErrorFrom(failed);
  return results.map((r) => (r as { value: T }).value);
}
