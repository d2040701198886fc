// A Node built-in the workerd code uses (nodejs_compat): synchronous SHA-256 for hashing
// inside an append transaction. Declared here so the worker project need not load all of @types/node.
declare module "node:crypto" {
  interface Hash {
    update(data: string | Uint8Array): Hash;
    copy(): Hash;
    digest(encoding: "hex"): string;
    /** A Buffer: its toString("hex") is the hex digest. */
    digest(): Uint8Array & { toString(encoding: "hex"): string };
  }
  export function createHash(algorithm: "sha256"): Hash;
}
