/**
 * Chain verification: walk records in seq order, check each prev_hash link and recompute each
 * content hash from the stored event bytes (docs/contract.md §7.1).
 *
 * One implementation serves the SessionObject (Audit.Verify), `agentctl verify` (over Replay) and
 * tests. Incremental (`push` one record at a time) so long journals verify page by page. The rules
 * live in chain-check.ts, shared with the inspector UI's asynchronous (WebCrypto) verifier; this
 * is their synchronous form. Tested in test/node/proto/chain-check.test.ts.
 */
import { sha256Hex } from "./canon.js";
import { ChainCheck, type ChainRecord, type ChainReport, type ServedRecord } from "./chain-check.js";

export type { ChainRecord, ChainReport, ServedRecord } from "./chain-check.js";
export { servedRecordOf } from "./chain-check.js";

export class ChainVerifier {
  private _check = new ChainCheck();

  /** Checks one record; after the first failure later records are counted but not checked. */
  push(r: ChainRecord): void {
    const canonical = this._check.admit(r);
    if (canonical !== undefined) this._check.settle(r, sha256Hex(canonical));
  }

  /** `push` for a record as Replay serves it (servedRecordOf): hashed from the content its event encodes. */
  pushServed(r: ServedRecord): void {
    const canonical = this._check.admitServed(r);
    if (canonical !== undefined) this._check.settle(r, sha256Hex(canonical));
  }

  report(): ChainReport {
    return this._check.report();
  }
}

export function verifyChain(records: Iterable<ChainRecord>): ChainReport {
  const v = new ChainVerifier();
  for (const r of records) v.push(r);
  return v.report();
}
