/**
 * The parse checkpoint (objects/session/parse-checkpoint.ts) on a real `wrangler dev`: a session
 * past 256 records stores one in workerd's SQLite, and after the server is killed mid-turn the
 * new object's first operation, a Cancel, decides from it and the records since which execution
 * was interrupted. The unit tests count what is read (test/node/session/session-cache.test.ts);
 * this one checks that the tables and statements work in workerd and that no write failed.
 */
import { readFileSync } from "node:fs";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";
import { startHost, type Host } from "../support/host.js";

let fake: FakeOpenAi;
let host: Host;

beforeAll(async () => {
  fake = await startFakeOpenAi();
  host = await startHost({ vars: { MODEL_BASE_URL: fake.url, MODEL_DEFAULT: "stand-in-1" } });
});

afterAll(async () => {
  await host?.stop();
  await fake?.close();
});

it("checkpoint: past 256 records, a turn cut short by a crash is closed by the new object's first Cancel, decided from the stored checkpoint; no write failed", async () => {
  const uid = (await host.client.create({ harness: "chat" })).metadata!.uid;
  // Five turns of 60 inputs (an Exec carries at most 64), then short ones.
  for (let t = 0; t < 5; t++) await host.client.exec({ session: uid, inputs: Array.from({ length: 60 }, (_, i) => `in ${t}.${i}`) });
  for (let i = 0; i < 3; i++) await host.client.exec({ session: uid, inputs: [`turn ${i}`] });

  // A turn whose model call never answers, and the server killed under it.
  fake.next = () => ({ kind: "hold" });
  const before = fake.requests.length;
  const cut = host.client.exec({ session: uid, inputs: ["cut short"] }).catch((e: unknown) => e);
  await fake.waitForRequests(before + 1);
  fake.next = () => ({ kind: "answer" });
  await host.kill();
  fake.releaseHeld();
  await cut;
  await host.restart();

  const head = (await host.records(uid)).length;
  expect(head).toBeGreaterThan(300);
  await host.client.cancel(uid);
  const records = await host.records(uid);
  expect(records).toHaveLength(head + 2);
  const end = records[head]!.event!;
  expect(end.body.case === "end" && end.body.value.state).toBe("CANCELED");
  // The interrupted execution is the one the END closes: the cut turn's.
  const cutStart = records.filter((r) => r.event!.body.case === "executionStart").at(-1)!.event!;
  expect(end.executionId).toBe(cutStart.executionId);

  // Nothing left to cancel; the session runs on and verifies with replay.
  const again = await host.client.cancel(uid).catch((e: unknown) => e);
  expect(again).toBeInstanceOf(ConnectError);
  expect((again as ConnectError).code).toBe(Code.FailedPrecondition);
  await host.client.exec({ session: uid, inputs: ["after"] });
  expect(await host.client.verify(uid, { replay: true })).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n });

  const log = readFileSync(host.server.logFile, "utf8");
  expect(log).not.toContain("parse checkpoint not stored");
});
