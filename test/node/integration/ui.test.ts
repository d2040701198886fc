/**
 * The inspector as the Worker serves it, against the shared `wrangler dev`: the page at `/` under a
 * policy that admits only its own script and stylesheet (no inline code, Trusted Types required),
 * the bundled assets byte for byte as committed and matching the page's integrity attributes, and
 * the browser's chain check (proto/chain-check.ts with WebCrypto) over a real journal read back
 * with Replay. The page in a real browser: ui-browser.test.ts.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { describe, expect, inject, it } from "vitest";
import { type ChainRecord, verifyChainAsync } from "../../../proto/chain-check.js";
import { EventSchema, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText } from "../../../proto/messages.js";
import { ROOT } from "../../../scripts/dev-server.js";
import { SessionsClient } from "../../../sdk/client.js";
import { UI_ASSETS, UI_PAGE } from "../../../worker/gen/ui-assets.js";

const baseUrl = () => inject("serverUrl");

function assetRefs(html: string): Array<{ path: string; integrity: string }> {
  return [...html.matchAll(/(?:src|href)="(\/ui\/[^"]+)" integrity="([^"]+)"/g)].map((m) => ({ path: m[1]!, integrity: m[2]! }));
}

function chainOf(records: LogRecord[]): ChainRecord[] {
  return records.map((r) => ({ seq: r.seq, prevHash: r.prevHash, hash: r.contentHash, event: r.event ?? create(EventSchema) }));
}

describe("inspector page", () => {
  it("GET /: the page, with a policy that runs only same-origin script and style and requires Trusted Types", async () => {
    const res = await fetch(`${baseUrl()}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = (res.headers.get("content-security-policy") ?? "").split("; ");
    expect(csp).toEqual(
      expect.arrayContaining([
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
        "frame-ancestors 'none'",
      ]),
    );
    expect(csp.join(";")).not.toMatch(/unsafe-inline|unsafe-eval/);
    const html = await res.text();
    expect(html).toBe(UI_PAGE);
    // No inline script or style, nothing from another origin.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toMatch(/https?:\/\//);
    expect(assetRefs(html)).toHaveLength(2);
  });

  it("GET /ui/…: each asset the page names is served as committed, matching its integrity, and cacheable for good", async () => {
    for (const ref of assetRefs(UI_PAGE)) {
      const res = await fetch(`${baseUrl()}${ref.path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toContain("immutable");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      const body = await res.text();
      expect(body).toBe(UI_ASSETS[ref.path]!.body);
      expect(ref.integrity).toBe(`sha384-${createHash("sha384").update(body).digest("base64")}`);
    }
    expect((await fetch(`${baseUrl()}/ui/inspector-000000000000.js`)).status).toBe(404);
  });

  it("ui sources: the DOM is built from text only, and nothing logs", () => {
    const dir = join(ROOT, "ui");
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".ts"))) {
      const text = readFileSync(join(dir, f), "utf8");
      expect(text, f).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|console\./);
    }
    for (const asset of Object.values(UI_ASSETS)) expect(asset.body).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });
});

describe("the browser's chain check against a real journal", () => {
  async function turnRecords(): Promise<LogRecord[]> {
    const client = new SessionsClient({ server: baseUrl() });
    const turn = await client.exec({ inputs: ["hello"] });
    const out: LogRecord[] = [];
    for await (const r of client.replay(turn.session.metadata!.uid)) out.push(r);
    expect(out.map((r) => Number(r.seq))).toEqual([1, 2, 3, 4, 5]);
    return out;
  }

  it("verifyChainAsync: accepts every record of an Exec turn read back with Replay", async () => {
    const records = await turnRecords();
    expect(await verifyChainAsync(chainOf(records))).toEqual({ ok: true, records: 5n, firstBadSeq: 0n, reason: "", headHash: records[4]!.contentHash });
  });

  it("verifyChainAsync: names the first bad seq when a text, a link or a record is altered", async () => {
    const records = await turnRecords();
    const altered = chainOf(records);
    const output = records[3]!.event!;
    expect(output.body.case).toBe("message");
    const changed = create(EventSchema, { ...output, body: { case: "message", value: assistantText("echo:HELLO") } });
    altered[3] = { ...altered[3]!, event: changed };
    expect(await verifyChainAsync(altered)).toMatchObject({ ok: false, firstBadSeq: 4n });

    const relinked = chainOf(records);
    relinked[2] = { ...relinked[2]!, prevHash: relinked[0]!.hash };
    expect(await verifyChainAsync(relinked)).toMatchObject({ ok: false, firstBadSeq: 3n });

    const gap = chainOf(records).filter((r) => r.seq !== 2n);
    expect(await verifyChainAsync(gap)).toMatchObject({ ok: false, firstBadSeq: 3n });
  });
});
