/**
 * Folds a SQLite write-ahead log into its database file, for tests that edit a stopped server's
 * Durable Object storage with sql.js (which reads only the main file).
 *
 * Why: after a graceful `wrangler dev` stop, workerd leaves `<db>.sqlite-wal` files behind, and a
 * session's committed rows may live only there (a fresh session's main file can be one empty page).
 * Editing the main file alone would read stale data, and on restart SQLite would replay the WAL
 * over the edit. So the tamper test applies the WAL's committed frames here, then deletes the -wal
 * and -shm files. Follows https://www.sqlite.org/fileformat.html §4 ("The WAL File Format"): only
 * frames whose salts match the header and whose cumulative checksum holds count, up to the last
 * commit frame. Used by test/node/cli/tamper.test.ts.
 */

const WAL_HEADER = 32;
const FRAME_HEADER = 24;

export interface WalFold {
  /** The database file with every committed frame applied. */
  db: Uint8Array;
  /** Committed frames applied (0 when the WAL held nothing valid). */
  frames: number;
}

export function foldWal(db: Uint8Array, wal: Uint8Array): WalFold {
  if (wal.length < WAL_HEADER) return { db, frames: 0 };
  const w = new DataView(wal.buffer, wal.byteOffset, wal.byteLength);
  const magic = w.getUint32(0);
  if (magic !== 0x377f0682 && magic !== 0x377f0683) throw new Error("not a SQLite WAL file");
  const bigEndian = (magic & 1) === 1;
  const pageSize = w.getUint32(8);
  const salt1 = w.getUint32(16);
  const salt2 = w.getUint32(20);
  let sum = checksum(wal, 0, 24, bigEndian, [0, 0]);
  if (sum[0] !== w.getUint32(24) || sum[1] !== w.getUint32(28)) return { db, frames: 0 };

  // Walk frames while they are valid; remember the pages as of the last commit frame.
  const pending = new Map<number, Uint8Array>();
  let committed = new Map<number, Uint8Array>();
  let dbPages = 0;
  let frames = 0;
  let counted = 0;
  for (let off = WAL_HEADER; off + FRAME_HEADER + pageSize <= wal.length; off += FRAME_HEADER + pageSize) {
    if (w.getUint32(off + 8) !== salt1 || w.getUint32(off + 12) !== salt2) break;
    sum = checksum(wal, off, 8, bigEndian, sum);
    sum = checksum(wal, off + FRAME_HEADER, pageSize, bigEndian, sum);
    if (sum[0] !== w.getUint32(off + 16) || sum[1] !== w.getUint32(off + 20)) break;
    pending.set(w.getUint32(off), wal.subarray(off + FRAME_HEADER, off + FRAME_HEADER + pageSize));
    counted++;
    const commitSize = w.getUint32(off + 4);
    if (commitSize !== 0) {
      committed = new Map(pending);
      dbPages = commitSize;
      frames = counted;
    }
  }
  if (frames === 0) return { db, frames: 0 };

  const out = new Uint8Array(dbPages * pageSize);
  out.set(db.subarray(0, Math.min(db.length, out.length)));
  for (const [pgno, page] of committed) if (pgno <= dbPages) out.set(page, (pgno - 1) * pageSize);
  return { db: out, frames };
}

/** SQLite's WAL checksum: Fibonacci-weighted sums of 32-bit words, continued from `seed`. */
function checksum(buf: Uint8Array, off: number, len: number, bigEndian: boolean, seed: [number, number]): [number, number] {
  const v = new DataView(buf.buffer, buf.byteOffset + off, len);
  let [s0, s1] = seed;
  for (let i = 0; i < len; i += 8) {
    s0 = (s0 + v.getUint32(i, !bigEndian) + s1) >>> 0;
    s1 = (s1 + v.getUint32(i + 4, !bigEndian) + s0) >>> 0;
  }
  return [s0, s1];
}
