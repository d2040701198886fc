/**
 * The connect URL and the reconnect backoff (docs/tunnel.md "Connecting", "Disconnects").
 */
import { describe, expect, it } from "vitest";
import { createBackoff } from "../../../sdk/harness/backoff.js";
import { isHarnessName, tunnelUrlFromBase } from "../../../sdk/harness/index.js";

describe("tunnelUrlFromBase", () => {
  it("maps http(s) to ws(s) and appends the connect path and name", () => {
    expect(tunnelUrlFromBase("http://127.0.0.1:8787", "my-agent")).toBe("ws://127.0.0.1:8787/harness/v1/connect?name=my-agent");
    expect(tunnelUrlFromBase("https://sessions.example.com/", "a1")).toBe("wss://sessions.example.com/harness/v1/connect?name=a1");
    expect(tunnelUrlFromBase("https://example.com/base/", "a1")).toBe("wss://example.com/base/harness/v1/connect?name=a1");
  });

  it("keeps ws(s) URLs and a URL that already names the connect path", () => {
    expect(tunnelUrlFromBase("wss://h/harness/v1/connect?name=old", "new")).toBe("wss://h/harness/v1/connect?name=new");
  });

  it("refuses other schemes and bad names", () => {
    expect(() => tunnelUrlFromBase("ftp://h", "a")).toThrow(/http\(s\) or ws\(s\)/);
    expect(() => tunnelUrlFromBase("not a url", "a")).toThrow(/not a URL/);
    expect(() => tunnelUrlFromBase("http://h", "-a")).toThrow(/bad harness name/);
  });

  it("isHarnessName: a DNS label of lowercase letters, digits and -", () => {
    expect(["a", "echo-2", "0x", "a".repeat(63)].every(isHarnessName)).toBe(true);
    expect(["", "-a", "A", "a_b", "a.b", "a".repeat(64)].some(isHarnessName)).toBe(false);
  });
});

describe("createBackoff", () => {
  it("next: doubles from initialMs up to maxMs, each delay jittered within the upper half", () => {
    const lo = createBackoff({ initialMs: 100, maxMs: 1_000 }, () => 0);
    const hi = createBackoff({ initialMs: 100, maxMs: 1_000 }, () => 1);
    expect([1, 2, 3, 4, 5, 6].map(() => lo.next())).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3, 4, 5, 6].map(() => hi.next())).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it("reset: starts again from the first step", () => {
    const b = createBackoff({ initialMs: 10, maxMs: 1_000 }, () => 1);
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(10);
  });
});
