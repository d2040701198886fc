/**
 * The incremental input hash (objects/controller/input-hash.ts) against its definition,
 * modelInputHash: equal for conversations that grow, change in the middle, shrink, swap the objects
 * for equal copies, and change the model, params or tools between calls.
 */
import { clone, create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { InputHashCache } from "../../../objects/controller/input-hash.js";
import { type Message, MessageSchema, ModelCallSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { modelInputHash } from "../../../proto/canon.js";
import { textMessage, userText } from "../../../proto/messages.js";

describe("input hash cache", () => {
  it("hash: equals modelInputHash for 2000 calls of a conversation that grows, rewinds, is copied and changes its other fields", () => {
    const cache = new InputHashCache();
    // mulberry32: a small seeded PRNG, so a failure reproduces.
    let a = 11;
    const rand = (n: number) => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
    };
    let convo: Message[] = [textMessage("system", "be brief")];
    for (let i = 0; i < 2000; i++) {
      switch (rand(8)) {
        case 0:
          // Rewound (a fork, a replay from earlier).
          convo = convo.slice(0, rand(convo.length + 1));
          break;
        case 1:
          // The same conversation rebuilt as new objects (a harness that copies history).
          convo = convo.map((m) => clone(MessageSchema, m));
          break;
        case 2:
          // Changed in the middle.
          if (convo.length > 1) convo[rand(convo.length)] = userText(`edited ${i}`);
          break;
        default:
          convo.push(rand(2) ? userText(`u${i} é\u2028`) : textMessage("assistant", `a${i}`));
      }
      const call = create(ModelCallSchema, {
        model: rand(3) ? "m1" : "m2",
        params: rand(4) ? {} : { temperature: "0.2" },
        messages: convo.slice(),
        tools: rand(5) ? [] : [{ name: "t", description: "d" }],
      });
      expect(cache.hash(call), `call ${i}`).toBe(modelInputHash(call));
    }
  });
});
