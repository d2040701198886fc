/** proto/sha256.ts in Node: whichever way its states are made here, they hash as createHash does (workerd: test/worker/sha256.test.ts). */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SHA256_DIRECT, sha256State } from "../../../proto/sha256.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("sha256 in Node", () => {
  it("wraps createHash: Node's own handle is never probed (constructing it with other arguments aborts the process)", () => {
    expect(SHA256_DIRECT).toBe(false);
  });

  it("digests and copies as createHash does", () => {
    for (let n = 0; n < 200; n += 7) {
      const data = new Uint8Array(n).map((_, i) => (i * 31 + n) & 0xff);
      const a = sha256State();
      a.update(data);
      const b = a.copy();
      b.update(data);
      expect(hex(a.digest())).toBe(createHash("sha256").update(data).digest("hex"));
      expect(hex(b.digest())).toBe(createHash("sha256").update(data).update(data).digest("hex"));
    }
  });
});
