/**
 * The inspector in a real browser (test/node/support/browser.ts: Debian's chromium through
 * playwright-core) against a real `wrangler dev` with the test-only harnesses, a stand-in model
 * provider and a stand-in tool executor that counts effects (docs/ui.md): the list and its
 * filters, a session's timeline and deep links, a turn appearing live, approving (which continues
 * the turn, the executor called once) and denying (the reason journaled), in-browser verification
 * catching a tampered record, "fork here" and the fork tree, branch comparison, and phone width.
 * Every page is checked for console errors and CSP violations. Screenshots: test-results/ui/.
 */
import type { Locator, Page } from "playwright-core";
import metered from "../../fixtures/harnesses/metered.js";
import { serve, type Serving } from "../../../sdk/harness/index.js";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EventKind, ToolResult_Code } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { type TestBrowser, type TestPage, launchBrowser } from "../support/browser.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeRequest, type Reply } from "../support/fake-openai.js";
import { startHost, type Host } from "../support/host.js";

let host: Host;
let model: FakeOpenAi;
let executor: FakeExecutor;
let browser: TestBrowser;
let harness: Serving;
const pages: TestPage[] = [];

beforeAll(async () => {
  [model, executor] = await Promise.all([startFakeOpenAi(), startFakeExecutor()]);
  // Both are kept even when the other fails, so afterAll stops the host a failed browser launch
  // (Chromium missing) would otherwise leave running.
  const [started, launched] = await Promise.allSettled([
    // A short idle limit makes the page's Tail stream reconnect often (the feed test below needs one).
    startHost({
      vars: { TEST_HARNESSES: "1", TOOL_EXECUTOR_URL: executor.url, MODEL_BASE_URL: model.url, MODEL_DEFAULT: "gpt-test", TAIL_IDLE_LIMIT_MS: "2000" },
    }),
    launchBrowser(),
  ]);
  if (started.status === "fulfilled") host = started.value;
  if (launched.status === "fulfilled") browser = launched.value;
  for (const r of [started, launched]) if (r.status === "rejected") throw r.reason;
  // A harness of our own that reports token usage, so journals carry USAGE records.
  harness = serve({ url: host.url, name: "metered", harness: metered, backoff: { initialMs: 50, maxMs: 200 } });
  await harness.connected;
}, 120_000);

beforeEach(() => {
  model.next = () => ({ kind: "answer" });
  executor.next = () => ({ kind: "ok" });
});

afterEach(async () => {
  for (const p of pages.splice(0)) await p.page.close();
});

afterAll(async () => {
  await harness?.close();
  await browser?.close();
  await host?.stop();
  await Promise.all([executor?.close(), model?.close()]);
});

async function open(path: string, o: { width?: number } = {}): Promise<Page> {
  const t = await browser.open(o);
  pages.push(t);
  await t.page.goto(host.url + path);
  return t.page;
}

/**
 * Waits for `locator`; on a timeout the failure says what the page showed instead (its address,
 * headings, alert and status lines, and any console problems), so a run that fails in CI explains itself.
 */
async function shown(page: Page, locator: Locator, what: string): Promise<void> {
  try {
    await locator.waitFor();
  } catch (e) {
    const line = async (id: string) =>
      (await page
        .locator(`#${id}`)
        .textContent({ timeout: 1000 })
        .catch(() => null)) ?? "(none)";
    const problems = pages.flatMap((p) => p.problems);
    const headings = await page
      .locator("h1, h2")
      .allTextContents()
      .catch(() => []);
    throw new Error(
      `${what} did not appear; the page at ${page.url()} showed headings ${JSON.stringify(headings)}, alert ${JSON.stringify(await line("alert"))}, status ${JSON.stringify(await line("status"))}; console problems: ${JSON.stringify(problems)}`,
      { cause: e },
    );
  }
}

/** No console error, page error or CSP violation on the pages this test opened (but those `allowed`). */
function expectCleanPages(allowed?: RegExp): void {
  expect(pages.flatMap((p) => p.problems).filter((p) => !allowed?.test(p))).toEqual([]);
}

const text = (s: string) => new TextEncoder().encode(s);
const rows = (page: Page) => page.locator("table.sessions tbody tr[data-uid]");

async function parkedTools(project: string, tool: string, args: Record<string, unknown>): Promise<string> {
  const s = await host.client.create({ project, name: `${tool} request`, harness: "tools" });
  const config = text(JSON.stringify({ calls: [{ id: "g1", tool, args, mediation: "REQUIRES_APPROVAL", approval_timeout_seconds: 3600 }] }));
  const turn = await host.client.exec({ session: s.metadata!.uid, inputs: [`please ${tool}`], config });
  expect(turn.finalSession?.pendingApproval?.toolCallId).toBe("g1");
  return s.metadata!.uid;
}

function effectsOf(uid: string): number[] {
  const keys = [...new Set(executor.requests.filter((q) => q.body.session === uid).map((q) => q.key))];
  return keys.map((k) => executor.effects.get(k) ?? 0);
}

describe("inspector in a browser", () => {
  it("list and filter: search, state, harness and label narrow the list, the address keeps the filters, and states stay live", async () => {
    const project = "ui-list";
    const alpha = await host.client.create({ project, name: "alpha", harness: "echo", labels: { team: "a" } });
    await host.client.exec({ session: alpha.metadata!.uid, inputs: ["hi"] });
    const beta = await host.client.create({ project, name: "beta", harness: "echo", labels: { team: "b" } });
    await parkedTools(project, "pay", { amount: 5 });

    const page = await open(`/#/sessions?project=${project}`);
    await page.locator('tr[data-uid] >> text="beta"').waitFor();
    expect(await rows(page).count()).toBe(3);
    const filters = page.locator("form.filters");
    await filters.getByLabel("Search").fill("alp");
    await page.waitForFunction(() => document.querySelectorAll("table.sessions tbody tr[data-uid]").length === 1);
    expect(await rows(page).first().textContent()).toContain("alpha");
    await filters.getByRole("button", { name: "Clear" }).click();
    await filters.getByLabel("State").selectOption("AWAITING");
    await page.waitForFunction(() => document.querySelectorAll("table.sessions tbody tr[data-uid]").length === 1);
    expect(await rows(page).first().textContent()).toContain("pay request");
    expect(page.url()).toContain("state=AWAITING");
    await page.getByText("open the approvals inbox").waitFor();
    await filters.getByRole("button", { name: "Clear" }).click();
    await filters.getByLabel("Harness").selectOption("echo");
    await filters.getByLabel("Label").fill("team=b");
    await page.waitForFunction(() => document.querySelectorAll("table.sessions tbody tr[data-uid]").length === 1);
    expect(await rows(page).first().textContent()).toContain("beta");
    await browser.screenshot(page, "sessions-list-filtered");

    // The filtered address is a link: opened afresh, it shows the same list.
    const again = await open(`/${new URL(page.url()).hash}`);
    await again.locator('tr[data-uid] >> text="beta"').waitFor();
    expect(await rows(again).count()).toBe(1);
    expect(await again.locator("form.filters").getByLabel("Label").inputValue()).toBe("team=b");

    // beta runs a turn elsewhere: its row turns COMPLETED without a reload.
    expect(await rows(again).first().textContent()).toContain("PENDING");
    await host.client.exec({ session: beta.metadata!.uid, inputs: ["hello"] });
    await again.locator(`tr[data-uid="${beta.metadata!.uid}"] >> text=COMPLETED`).waitFor({ timeout: 30_000 });
    await filters.getByRole("button", { name: "Clear" }).click();
    await browser.screenshot(page, "sessions-list");
    expectCleanPages();
  });

  it("open a session: /#<uid> shows its turns with inputs, outputs and records; /#<uid>/seq/<n> marks the record", async () => {
    const s = await host.client.create({ project: "ui-open", name: "two turns", harness: "echo" });
    const uid = s.metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["first question"] });
    await host.client.exec({ session: uid, inputs: ["second question"] });

    const page = await open(`/#${uid}`);
    await page.getByRole("heading", { name: "two turns" }).waitFor();
    await page.locator("section.turn").nth(1).waitFor();
    const turns = page.locator("section.turn");
    expect(await turns.count()).toBe(2);
    expect(await turns.nth(0).locator("summary").textContent()).toContain("“first question” → “echo:first question”");
    expect(await page.locator(".rec").evaluateAll((els) => els.map((e) => e.getAttribute("data-kind")))).toEqual([
      ...["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"],
      ...["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"],
    ]);
    expect(await page.locator("#rec-4 .summary").textContent()).toBe("assistant: echo:first question");

    const deep = await open(`/#${uid}/seq/9`);
    await deep.locator("#rec-9.target").waitFor();
    expect(await deep.locator("#rec-9 .summary").textContent()).toBe("assistant: echo:second question");

    // The journal's live feed (Tail) loses the server for a moment: the page says so in its own
    // words (no CLI advice), and the message goes once it reconnects. The idle limit ends the open
    // stream within 2 s; the reconnect meets the refused route.
    await deep.route("**/agentsessions.edge.v1.Tail/Tail", (route) => route.abort("connectionrefused"));
    const alert = deep.getByRole("alert");
    await alert.getByText("Following the journal failed: network: no answer from the server. Is the host running?").waitFor({ timeout: 30_000 });
    expect(await alert.textContent()).not.toMatch(/--|agentctl|npm start/);
    await deep.unroute("**/agentsessions.edge.v1.Tail/Tail");
    await alert.waitFor({ state: "hidden", timeout: 30_000 });
    expectCleanPages(/Failed to load resource: net::ERR_CONNECTION_REFUSED/);
  });

  it("live turn: records of a turn run elsewhere appear while it runs, then its end", async () => {
    const s = await host.client.create({ project: "ui-live", name: "live", harness: "hold" });
    const uid = s.metadata!.uid;
    const page = await open(`/#${uid}`);
    await page.getByText("No records yet").waitFor();

    const gate = `live-${uid}`;
    const config = text(JSON.stringify({ hold_url: `${model.url}/hold/${gate}` }));
    const turn = host.client.exec({ session: uid, inputs: ["live one"], config }).catch((e: unknown) => e);
    await page.locator(".rec[data-kind=OUTPUT] .summary", { hasText: "live one" }).waitFor({ timeout: 30_000 });
    await page.locator("section.turn .chip.state-running").waitFor({ timeout: 30_000 });
    expect(await page.locator(".rec[data-kind=END]").count()).toBe(0);
    model.openGate(gate);
    expect(await turn).not.toBeInstanceOf(Error);
    await page.locator(".rec[data-kind=END]").waitFor({ timeout: 30_000 });
    await page.locator("section.turn .chip.state-completed").waitFor({ timeout: 30_000 });
    expectCleanPages();
  });

  it("live text: a chat turn run elsewhere streams its text into the page, which gives way to the committed OUTPUT", async () => {
    const s = await host.client.create({ project: "ui-live", name: "streaming", harness: "chat" });
    const uid = s.metadata!.uid;
    const page = await open(`/#${uid}`);
    await page.getByText("No records yet").waitFor();
    model.next = () => ({ kind: "slow", chunkMs: 250, chunks: 12 });
    try {
      const turn = host.client.exec({ session: uid, inputs: ["stream please"] });
      await page.locator(".live-turn pre", { hasText: /w\d+\.0 w\d+\.1/ }).waitFor({ timeout: 30_000 });
      expect(await page.locator(".rec[data-kind=OUTPUT]").count()).toBe(0);
      const done = await turn;
      await page.locator(".rec[data-kind=END]").waitFor({ timeout: 30_000 });
      await page.locator(".live-turn").waitFor({ state: "hidden", timeout: 30_000 });
      expect(await page.locator(".rec[data-kind=OUTPUT] .summary").textContent()).toBe(`assistant: ${done.outputs[0]}`);
    } finally {
      model.next = () => ({ kind: "answer" });
    }
    expectCleanPages();
  });

  it("approve: the panel shows tool, arguments and deadline; approving commits the decision and continues the turn (a failed resume is retried), the executor runs once", async () => {
    const project = "ui-approve";
    const refund = { order: "A-1001", amount: 120.5, currency: "EUR", reason: "damaged on arrival" };
    model.next = ((req: FakeRequest): Reply => {
      const result = req.body.messages?.find((m) => m.role === "tool");
      if (!result) return { kind: "answer", text: "", toolCalls: [{ id: "call_1", name: "refund", arguments: JSON.stringify(refund) }] };
      return { kind: "answer", text: `Refunded: ${result.content}` };
    }) as FakeOpenAi["next"];
    executor.next = () => ({ kind: "ok", output: { refunded: true, amount: 120.5 }, content: "refund R-77 issued" });
    const tools = [
      { name: "refund", description: "Refund an order", input_schema: { type: "object" }, mediation: "REQUIRES_APPROVAL", approval_timeout_seconds: 3600 },
    ];
    const s = await host.client.create({ project, name: "customer 4411", harness: "chat" });
    const uid = s.metadata!.uid;
    const parked = await host.client.exec({
      session: uid,
      inputs: ["My order A-1001 arrived broken, please refund it"],
      config: text(JSON.stringify({ tools })),
    });
    expect(parked.finalSession?.pendingApproval?.toolCallId).toBe("call_1");

    const page = await open(`/#${uid}`);
    const panel = page.locator(".gate-box section.gate");
    await panel.waitFor();
    expect(await panel.locator(".gate-tool").textContent()).toContain("refund");
    expect(await panel.locator("details.args pre").textContent()).toContain('"amount": 120.5');
    expect(await panel.locator(".countdown").textContent()).toMatch(/^denied automatically in 59 m/);
    expect(await panel.textContent()).toContain("harness chat");
    await browser.screenshot(page, "approval");

    // The first Resume fails (the host is briefly unreachable): the decision stays committed.
    let resumes = 0;
    await page.route("**/agentsessions.v1.Sessions/Resume", (route) => {
      resumes++;
      return route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ code: "unavailable", message: "the host is restarting" }) });
    });
    await panel.getByLabel("Reason").fill("within policy");
    await panel.getByRole("button", { name: "Approve and continue" }).click();
    await panel.getByText(/Decision committed at seq 8 \(approved\); resume failed: unavailable: the host is restarting/).waitFor();
    expect(resumes).toBe(1);
    expect(effectsOf(uid)).toEqual([]);
    await page.unroute("**/agentsessions.v1.Sessions/Resume");
    await panel.getByRole("button", { name: "Retry resume" }).click();
    await page.getByText(/Decision committed at seq 8 \(approved\)\. The turn continued: COMPLETED/).waitFor({ timeout: 30_000 });
    await page.locator(".rec[data-kind=END]").waitFor({ timeout: 30_000 });
    await page.locator(".rec[data-kind=OUTPUT] .summary", { hasText: "Refunded: refund R-77 issued" }).waitFor();
    expect(await panel.locator(".gate-tool .chip").textContent()).toBe("approved");
    expect(await panel.locator(".countdown").count()).toBe(0);

    expect(effectsOf(uid)).toEqual([1]);
    const recs = await host.records(uid);
    const decision = recs.find((r) => r.event?.kind === EventKind.EVENT_APPROVAL_RESULT)!;
    expect(decision.seq).toBe(8n);
    expect(decision.event?.body.case === "approvalResult" && decision.event.body.value).toMatchObject({ approved: true, reason: "within policy" });
    expect((await host.client.get(uid)).pendingApproval).toBeUndefined();
    await browser.screenshot(page, "approved-timeline");
    // The browser logs the stand-in 503 of the first Resume; nothing else may appear.
    expectCleanPages(/status of 503/);
  });

  it("deny: the inbox lists every pending gate with its arguments; a denial needs a reason, journals it, and the executor is never called", async () => {
    const project = "ui-deny";
    const uid = await parkedTools(project, "wire_transfer", { to: "NL91ABNA0417164300", amount: 9800, currency: "EUR" });
    const other = await parkedTools(project, "delete_account", { account: "acct_19" });
    const page = await open(`/#/approvals?project=${project}`);
    await page.getByText("2 tool calls await a decision.").waitFor();
    const card = page.locator("section.gate", { hasText: "wire_transfer" });
    expect(await card.locator("details.args pre").textContent()).toContain('"to": "NL91ABNA0417164300"');
    expect(await page.locator("section.gate", { hasText: "delete_account" }).count()).toBe(1);
    await browser.screenshot(page, "approvals-inbox");

    await card.getByRole("button", { name: "Deny" }).click();
    await card.getByText("A denial needs a reason").waitFor();
    await card.getByLabel("Reason").fill("amount over the daily limit");
    await card.getByRole("button", { name: "Deny" }).click();
    await card.getByText(/Decision committed at seq 6 \(denied\)\. The turn continued/).waitFor({ timeout: 30_000 });

    const recs = await host.records(uid);
    const decision = recs.find((r) => r.event?.kind === EventKind.EVENT_APPROVAL_RESULT)!;
    expect(decision.event?.body.case === "approvalResult" && decision.event.body.value).toMatchObject({
      approved: false,
      reason: "amount over the daily limit",
    });
    const receipt = recs.find((r) => r.event?.kind === EventKind.EVENT_TOOL_RESULT)!;
    expect(receipt.event?.body.case === "result" && receipt.event.body.value.code).toBe(ToolResult_Code.APPROVAL_DENIED);
    expect(effectsOf(uid)).toEqual([]);
    // The decided gate leaves the inbox on its next refresh; the other one stays.
    await page.getByText("1 tool call awaits a decision.").waitFor({ timeout: 30_000 });
    expect((await host.client.get(other)).pendingApproval?.toolCallId).toBe("g1");
    expectCleanPages();
  });

  it("verify: VERIFIED names the head it covers, turns stale as records arrive, and a record altered in transit is BROKEN at its seq", async () => {
    const s = await host.client.create({ project: "ui-verify", name: "audited", harness: "echo" });
    const uid = s.metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["hello"] });
    const page = await open(`/#${uid}`);
    await page.locator("#rec-5").waitFor();
    await page.getByRole("button", { name: "Verify chain" }).click();
    await page.getByText("VERIFIED in this browser: 5 records").waitFor();

    // A turn from the page: the old verdict no longer claims the whole journal.
    await page.getByLabel("Message").fill("again");
    await page.getByRole("button", { name: "Run turn" }).click();
    await page.locator("#rec-10").waitFor();
    await page.getByText("Verified up to seq 5 only: 5 newer records since.").waitFor();

    // Now every Replay answer has seq 4's text changed on the way (same length, still decodable).
    await page.route("**/agentsessions.v1.Sessions/Replay", async (route) => {
      const res = await route.fetch();
      const body = Buffer.from(await res.body());
      const at = body.indexOf("echo:hello");
      if (at >= 0) body[at + 5] = "j".charCodeAt(0);
      await route.fulfill({ response: res, body });
    });
    await page.getByRole("button", { name: "Verify chain" }).click();
    await page.getByText("BROKEN at seq 4: content_hash does not match the recomputed hash").waitFor();
    await page.locator("#rec-4.bad").waitFor();
    await page.unroute("**/agentsessions.v1.Sessions/Replay");
    expectCleanPages();
  });

  it("branch name: a name being typed keeps its focus and text while a turn run elsewhere redraws the session's head", async () => {
    const s = await host.client.create({ project: "ui-typing", name: "typing", harness: "echo" });
    const uid = s.metadata!.uid;
    const page = await open(`/#${uid}`);
    await page.getByText("No records yet").waitFor();
    const field = page.getByLabel("New branch name");
    await field.click();
    await page.keyboard.type("le");
    await host.client.exec({ session: uid, inputs: ["elsewhere"] });
    await page.locator(".rec[data-kind=END]").waitFor();
    // The head shows the new head seq: it was drawn again after the records came.
    await page.waitForFunction(() => !document.querySelector("dl.facts")?.textContent?.includes("last seq0"));
    await page.keyboard.type("af");
    expect(await field.inputValue()).toBe("leaf");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("branch-name");
    expectCleanPages();
  });

  it("fork here: a record's Fork here makes a named child that opens, and the tree shows it (and a grandchild) with fork seqs and tokens", async () => {
    const s = await host.client.create({ project: "ui-fork", name: "trunk", harness: "metered" });
    const uid = s.metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["one"] });
    await host.client.exec({ session: uid, inputs: ["two"] });
    const page = await open(`/#${uid}`);
    await page.locator("#rec-12").waitFor();
    // Each metered turn reports 7 + 3 tokens: per model call, per turn and for the session.
    expect(await page.locator("#rec-3 .tokens").textContent()).toBe("7 in · 3 out");
    expect(await page.locator("section.turn > details > summary").first().textContent()).toContain("10 tokens");
    expect(await page.locator(".usage").textContent()).toContain("20 tokens: 14 in · 6 out");
    await page.getByLabel("New branch name").fill("after-one");
    await page.getByRole("button", { name: "Fork here: a new branch with records 1 to 6" }).click();
    await shown(page, page.getByRole("heading", { name: "after-one" }), "the forked child's heading");
    const child = new URL(page.url()).hash.slice(1);
    expect(child).toMatch(/^sess-[0-9a-f]{24}$/);
    expect(await page.locator("dl.facts").textContent()).toContain("after seq 6");
    await page.locator("#rec-7[data-kind=LIFECYCLE]").waitFor();
    await page.getByLabel("Message").fill("three");
    await page.getByRole("button", { name: "Run turn" }).click();
    await page.locator("#rec-13[data-kind=END]").waitFor();

    await page.getByLabel("New branch name").fill("leaf");
    await page.getByRole("button", { name: /^Fork at head/ }).click();
    await shown(page, page.getByRole("heading", { name: "leaf" }), "the grandchild's heading");
    await page.getByRole("link", { name: "Branches" }).click();
    await page.locator("ul.tree li[data-uid] li[data-uid] li[data-uid]").waitFor();
    const tree = await page
      .locator("ul.tree li[data-uid]")
      .evaluateAll((els) => els.map((e) => [e.querySelector(":scope > .node > a")?.textContent, e.querySelector(":scope > .edge")?.textContent ?? ""]));
    expect(tree).toEqual([
      ["trunk", ""],
      ["after-one", "after seq 6"],
      ["leaf", "after seq 13"],
    ]);
    const tokens = (u: string) => page.locator(`li[data-uid="${u}"] > .node .tokens`);
    await page.waitForFunction(() => Array.from(document.querySelectorAll(".node .tokens")).every((n) => n.textContent !== ""));
    expect(await tokens(uid).textContent()).toBe("20 tokens");
    expect(await tokens(child).textContent()).toBe("20 tokens (10 since fork)");
    await browser.screenshot(page, "branches-tree");
    expectCleanPages();
  });

  it("compare: two branches picked in the tree show their common prefix, where they diverge and what each said", async () => {
    const s = await host.client.create({ project: "ui-compare", name: "question", harness: "metered" });
    const uid = s.metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["where next?"] });
    const [left, right] = await host.client.fork(uid, { at: 6n, count: 2, names: ["left", "right"] });
    await host.client.exec({ session: left!.metadata!.uid, inputs: ["take the left path"] });
    await host.client.exec({ session: right!.metadata!.uid, inputs: ["take the right path"] });
    await host.client.exec({ session: right!.metadata!.uid, inputs: ["and keep going"] });

    const page = await open(`/#${uid}/tree`);
    await page.getByLabel("Select left for comparison").check();
    await page.getByLabel("Select right for comparison").check();
    await page.getByRole("link", { name: "Compare the two selected" }).click();
    // Siblings share the parent's records and their fork marker.
    await page.getByText("They share seq 1–7 (7 records").waitFor();
    expect(await page.locator(".divergence").textContent()).toContain("They diverge at seq 8: left then has a turn on “take the left path”");
    const cols = page.locator(".compare-col");
    expect(await cols.nth(0).locator(".said-list").textContent()).toMatch(/^#11 answer #\d+: take the left path$/);
    const said = await cols.nth(1).locator(".said-list li").allTextContents();
    expect(said).toEqual([expect.stringMatching(/^#11 answer #\d+: take the right path$/), expect.stringMatching(/^#17 answer #\d+: and keep going$/)]);
    expect(await cols.nth(1).locator(".rec").count()).toBe(12);
    expect(await cols.nth(1).textContent()).toContain("12 records after the common prefix, head #19 · 20 tokens");
    await browser.screenshot(page, "branches-compare");
    expectCleanPages();
  });

  it("phone width: at 420 px the list, a session and its approval panel fit the screen and the controls work", async () => {
    const uid = await parkedTools("ui-phone", "refund", { order: "B-7", amount: 42 });
    const page = await open(`/#${uid}`, { width: 420 });
    const approve = page.getByRole("button", { name: "Approve and continue" });
    await approve.waitFor();
    const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    expect(await fits()).toBe(true);
    const box = (await approve.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(420);
    await browser.screenshot(page, "phone-session");
    await approve.click();
    await page.getByText(/The turn continued: COMPLETED/).waitFor({ timeout: 30_000 });
    expect(effectsOf(uid)).toEqual([1]);

    await page.goto(`${host.url}/#/sessions?project=ui-phone`);
    await rows(page).first().waitFor();
    expect(await fits()).toBe(true);
    await browser.screenshot(page, "phone-list");
    expectCleanPages();
  });
});
