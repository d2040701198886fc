/**
 * SHA-256 as the journal and the model call's input hash use it: a state that takes bytes, gives
 * its 32-byte digest, and copies itself (docs/platform.md P20).
 *
 * workerd's node:crypto builds each `Hash` as a stream object (a Transform) around a native hash
 * handle and copies the digest into a Buffer: on a record's few hundred bytes that costs about twice
 * the hashing itself, once per record appended. Where the handle's class can be found on a `Hash`
 * (its `kHandle` symbol) and it hashes a probe exactly as `createHash` does, the states here are
 * made from that class directly. Anywhere else (Node, or a workerd whose internals differ) they wrap
 * `createHash`, so a change inside workerd can cost speed but never a wrong hash. Nothing is probed
 * outside workerd: Node's handle class aborts the process when constructed with other arguments.
 */
import * as nodeCrypto from "node:crypto";

/** A running SHA-256. */
export interface Sha256State {
  update(bytes: Uint8Array): unknown;
  /** The 32-byte digest; the state is spent. */
  digest(): Uint8Array;
  /** An independent state that has taken the same bytes so far. */
  copy(): Sha256State;
}

/** The native handle as workerd's node:crypto uses it (an explicit `undefined` where it takes no output length). */
interface Handle {
  update(bytes: Uint8Array): boolean;
  digest(): Uint8Array;
  copy(outputLength: undefined): Handle;
}

type HandleClass = new (algorithm: string, outputLength: undefined) => Handle;

/** A native handle behind the interface, checked as workerd's own Hash checks it. */
class DirectHash implements Sha256State {
  constructor(private readonly _h: Handle) {}

  update(bytes: Uint8Array): void {
    if (!this._h.update(bytes)) throw new Error("SHA-256 update failed");
  }

  digest(): Uint8Array {
    return this._h.digest();
  }

  copy(): Sha256State {
    return new DirectHash(this._h.copy(undefined));
  }
}

/** A node:crypto Hash behind the same interface. */
class StreamHash implements Sha256State {
  constructor(private readonly _h: nodeCrypto.Hash) {}

  update(bytes: Uint8Array): void {
    this._h.update(bytes);
  }

  digest(): Uint8Array {
    return this._h.digest();
  }

  copy(): Sha256State {
    return new StreamHash(this._h.copy());
  }
}

/**
 * The native handle's class when it behaves as the interface says on a probe: two states that
 * share a prefix through `copy`, each compared with createHash's digest of the same bytes.
 */
function probeHandleClass(): HandleClass | undefined {
  // Only in workerd: Node's handle class takes other arguments, and a wrong one aborts the process
  // (a native assertion, not an exception).
  if ((globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent !== "Cloudflare-Workers") return undefined;
  try {
    const outer = nodeCrypto.createHash("sha256");
    const key = Object.getOwnPropertySymbols(outer).find((s) => s.description === "kHandle");
    const Handle = key && ((outer as unknown as Record<symbol, { constructor?: unknown }>)[key]?.constructor as HandleClass | undefined);
    if (typeof Handle !== "function" || Handle.name !== "HashHandle") return undefined;
    const bytes = (s: string) => new TextEncoder().encode(s);
    const want = (s: string) => new Uint8Array(nodeCrypto.createHash("sha256").update(bytes(s)).digest());
    const a = new DirectHash(new Handle("sha256", undefined));
    a.update(bytes("probe: "));
    const b = a.copy();
    a.update(bytes("one"));
    b.update(bytes("two"));
    const same = (got: unknown, text: string) => {
      const expected = want(text);
      return got instanceof Uint8Array && got.length === 32 && got.every((v, i) => v === expected[i]);
    };
    return same(a.digest(), "probe: one") && same(b.digest(), "probe: two") ? Handle : undefined;
  } catch {
    return undefined;
  }
}

const HandleClass = probeHandleClass();

/** Whether states come from workerd's native handle (true in workerd today; false in Node). */
export const SHA256_DIRECT = HandleClass !== undefined;

/** A fresh SHA-256 state. */
export function sha256State(): Sha256State {
  return HandleClass ? new DirectHash(new HandleClass("sha256", undefined)) : new StreamHash(nodeCrypto.createHash("sha256"));
}
