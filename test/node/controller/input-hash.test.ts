/**
 * The incremental input hash (objects/controller/input-hash.ts) against its definition,
 * modelInputHash: equal for conversations that grow, change in the middle, shrink, swap the objects
 * for equal copies, and change the model, params or tools between calls; and for one array grown in
 * place with its past sealed (runtimes/harness-spi.ts sealMessages), as the built-in chat hands it.
 */
import { clone, create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { InputHashCache } from "../../../objects/controller/input-hash.js";
import { type Message, MessageSchema, ModelCallSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { modelInputHash } from "../../../proto/canon.js";
import { textMessage, userText } from "../../../proto/messages.js";
import { sealedLength, sealMessages } from "../../../runtimes/harness-spi.js";

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

  it("hash: one array grown in place with its past sealed equals modelInputHash, its tail cut and rebuilt with copies, edits or other messages", () => {
    const cache = new InputHashCache();
    let a = 7;
    const rand = (n: number) => {
      a = (a * 1103515245 + 12345) >>> 0;
      return (a >>> 8) % n;
    };
    const convo: Message[] = [textMessage("system", "be brief")];
    let sealed = 1;
    sealMessages(convo, sealed);
    for (let i = 0; i < 2000; i++) {
      switch (rand(6)) {
        case 0: {
          // A new turn: the last turn's own messages are cut, and some of what follows is sealed.
          convo.length = sealed;
          for (let k = rand(4); k > 0; k--) convo.push(rand(2) ? userText(`h${i}.${k}`) : textMessage("assistant", `h${i}.${k}`));
          sealed = sealed + rand(convo.length - sealed + 1);
          sealMessages(convo, sealed);
          break;
        }
        case 1:
          // The unsealed tail replaced by equal copies, or by something else.
          for (let k = sealed; k < convo.length; k++) convo[k] = rand(2) ? clone(MessageSchema, convo[k]!) : userText(`t${i}`);
          break;
        default:
          convo.push(rand(2) ? userText(`u${i}`) : textMessage("assistant", `a${i}`));
      }
      const call = create(ModelCallSchema, { model: "m", tools: [] });
      call.messages = convo;
      expect(cache.hash(call), `call ${i}`).toBe(modelInputHash(create(ModelCallSchema, { model: "m", messages: convo.slice() })));
      // Now and then another array (a compaction, another harness): compared whole, from the seal's reference.
      if (rand(10) === 0) {
        const other = create(ModelCallSchema, { model: "m", messages: convo.slice(0, rand(convo.length + 1)) });
        expect(cache.hash(other), `other ${i}`).toBe(modelInputHash(other));
      }
    }
  });

  it("hash: a call that continues the same sealed array reads none of its sealed messages", () => {
    const cache = new InputHashCache();
    const history = Array.from({ length: 500 }, (_, i) => (i % 2 ? textMessage("assistant", `a${i}`) : userText(`q${i}`)));
    const convo: Message[] = [...history, userText("now")];
    sealMessages(convo, history.length);
    const call = create(ModelCallSchema, { model: "m" });
    call.messages = convo;
    expect(cache.hash(call)).toBe(modelInputHash(call));
    // Every sealed entry now counts its reads; the next call (the answer and a new input after it) must not read them.
    let reads = 0;
    for (let i = 0; i < history.length; i++) {
      const m = convo[i]!;
      Object.defineProperty(convo, i, {
        get: () => {
          reads++;
          return m;
        },
        enumerable: true,
      });
    }
    convo.push(textMessage("assistant", "answer"), userText("next"));
    expect(cache.hash(call)).toBe(
      modelInputHash(create(ModelCallSchema, { model: "m", messages: [...history, userText("now"), textMessage("assistant", "answer"), userText("next")] })),
    );
    expect(reads).toBe(0);
    // The same messages in a new array are compared whole.
    const copy = create(ModelCallSchema, {
      model: "m",
      messages: [...history, userText("now"), textMessage("assistant", "answer"), userText("next"), userText("more")],
    });
    expect(cache.hash(copy)).toBe(modelInputHash(copy));
    expect(reads).toBeGreaterThanOrEqual(history.length);
  });

  it("sealMessages: a seal only reaches further, and never past the array", () => {
    const convo = [userText("a"), userText("b")];
    expect(sealedLength(convo)).toBe(0);
    sealMessages(convo, 1);
    expect(sealedLength(convo)).toBe(1);
    expect(() => sealMessages(convo, 0)).toThrow(/already sealed/);
    expect(() => sealMessages(convo, 3)).toThrow(/cannot seal 3 of 2/);
    sealMessages(convo, 2);
    expect(sealedLength(convo)).toBe(2);
  });
});
