/**
 * Blobs beside an exported journal (docs/blobs.md "Export"): `<dir of the SQLite file>/blobs/<hex>`,
 * one file per digest, so a verifier holding only the export checks the chain and every blob the
 * chain names. Used by `agentctl export` and `agentctl verify --export`.
 */
import { createHash } from "node:crypto";
import { createReadStream, existsSync } from "node:fs";
import { mkdir, open, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { BlobReference } from "../proto/blob-ref.js";
import type { SessionsClient } from "../sdk/client.js";

export function blobsDirOf(journalFile: string): string {
  return join(dirname(journalFile), "blobs");
}

/**
 * Streams one blob from the host into `dir/<hex>`, hashing as it goes: a blob that arrives with
 * another digest or length is not kept. Skipped when a file of that name and length is there.
 */
export async function downloadBlob(client: SessionsClient, session: string, ref: BlobReference, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, ref.sha256);
  if (existsSync(file) && (await stat(file)).size === ref.bytes && (await hashFile(file)).sha256 === ref.sha256) return;
  const part = `${file}.part`;
  const fh = await open(part, "w");
  const h = createHash("sha256");
  let bytes = 0;
  try {
    for await (const chunk of client.blobChunks(session, ref.sha256)) {
      h.update(chunk);
      bytes += chunk.length;
      await fh.write(chunk);
    }
  } finally {
    await fh.close();
  }
  const got = h.digest("hex");
  if (got !== ref.sha256 || bytes !== ref.bytes) {
    await rm(part, { force: true });
    throw new Error(`blob sha256:${ref.sha256} arrived as ${bytes} bytes with SHA-256 ${got}: it does not match its reference; run agentctl verify`);
  }
  await rename(part, file);
}

export async function hashFile(file: string): Promise<{ bytes: number; sha256: string }> {
  const h = createHash("sha256");
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    h.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: h.digest("hex") };
}
