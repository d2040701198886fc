/**
 * JSON-level hostility for the fuzz suite: random JSON values, wrong types swapped in for known
 * fields, unknown fields, huge numbers, strings past the storage limits, nesting thousands of levels deep, invalid UTF-8 inside
 * strings and plain garbage. Starts from the proto3-JSON of a valid-ish request (cases.ts).
 */
import { concat, HUGE_SIZES, INVALID_UTF8, utf8 } from "./wire.js";
import type { Rng } from "./rng.js";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Numbers and number-like strings that overflow, underflow or are not integers. */
const HOSTILE_NUMBERS: readonly string[] = [
  "9223372036854775808",
  "-9223372036854775809",
  "18446744073709551616",
  "1e400",
  "-1e400",
  "1.5",
  "-0",
  "2147483648",
  "-2147483649",
  "1e-400",
  "123456789012345678901234567890123456789",
  "0.0000000000000000000000001",
];

export function randomJson(rng: Rng, depth = 0): Json {
  const kind = rng.int(depth > 3 ? 5 : 7);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.chance(0.5) ? rng.range(-1000, 1000) : Number(rng.pick(HOSTILE_NUMBERS));
    case 3:
      return rng.chance(0.3) ? rng.pick(HOSTILE_NUMBERS) : rng.word();
    case 4:
      return rng.pick(["", "NaN", "Infinity", "EVENT_INPUT", "sess-", "true", "0", "AAAA", "=="]);
    case 5:
      return Array.from({ length: rng.int(4) }, () => randomJson(rng, depth + 1));
    default: {
      const o: { [k: string]: Json } = {};
      for (let i = rng.int(4); i > 0; i--) o[rng.word(8)] = randomJson(rng, depth + 1);
      return o;
    }
  }
}

/** JSON text nested `levels` deep: objects, arrays or both, innermost `null`. */
export function deepJsonText(rng: Rng, levels: number): string {
  const style = rng.int(3);
  let open = "";
  let close = "";
  for (let i = 0; i < levels; i++) {
    const arr = style === 1 || (style === 2 && i % 2 === 1);
    open += arr ? "[" : '{"a":';
    close = (arr ? "]" : "}") + close;
  }
  return open + "null" + close;
}

export type JsonMutation = "wrong-type" | "unknown-field" | "drop-field" | "huge-number" | "deep" | "top-level" | "duplicate-key" | "huge-string";

/** One structural mutation of a request's proto3-JSON object. */
export function mutateJson(rng: Rng, doc: { [k: string]: Json }): { text: string; how: JsonMutation } {
  const how = rng.pick<JsonMutation>(["wrong-type", "unknown-field", "drop-field", "huge-number", "deep", "top-level", "duplicate-key", "huge-string"]);
  const copy = JSON.parse(JSON.stringify(doc)) as { [k: string]: Json };
  const target = pickContainer(rng, copy);
  const keys = Object.keys(target);
  const key = keys.length ? rng.pick(keys) : "session";
  switch (how) {
    case "wrong-type":
      target[key] = randomJson(rng);
      return { how, text: JSON.stringify(copy) };
    case "unknown-field":
      target[rng.pick(["input", "sesion", "@type", "__proto__", "constructor", rng.word(6)])] = randomJson(rng);
      return { how, text: JSON.stringify(copy) };
    case "drop-field":
      delete target[key];
      return { how, text: JSON.stringify(copy) };
    case "huge-number": {
      // Spliced in as raw text so JSON.stringify cannot round it.
      const marker = "\u0000HUGE\u0000";
      target[key] = marker;
      return { how, text: JSON.stringify(copy).replace(JSON.stringify(marker), rng.pick(HOSTILE_NUMBERS)) };
    }
    case "deep": {
      const marker = "\u0000DEEP\u0000";
      target[key] = marker;
      const levels = rng.pick([50, 99, 100, 101, 200, 1000, 10_000]);
      return { how, text: JSON.stringify(copy).replace(JSON.stringify(marker), deepJsonText(rng, levels)) };
    }
    case "huge-string": {
      // A string field (or a new map entry) past the storage limits.
      const inner = Object.values(target).find(isObject);
      if (inner && rng.chance(0.6)) {
        // Into the request's message field (CreateSession's session), where the metadata lives.
        inner[rng.pick(["name", "model", "harness", "labels"])] = rng.chance(0.5) ? "x".repeat(rng.pick(HUGE_SIZES)) : { k: "x".repeat(rng.pick(HUGE_SIZES)) };
        return { how, text: JSON.stringify(copy) };
      }
      const stringKeys = keys.filter((k) => typeof target[k] === "string");
      const big = "x".repeat(rng.pick(HUGE_SIZES));
      if (stringKeys.length) target[rng.pick(stringKeys)] = big;
      else target[rng.pick(["labels", "annotations"])] = { k: big };
      return { how, text: JSON.stringify(copy) };
    }
    case "top-level":
      return { how, text: JSON.stringify(rng.pick<Json>([[copy], null, 0, "x", true, [], randomJson(rng)])) };
    case "duplicate-key": {
      const text = JSON.stringify(copy);
      return { how, text: text.length > 2 ? `{"${key}":${JSON.stringify(randomJson(rng))},${text.slice(1)}` : text };
    }
  }
}

/** A nested object of the document (or the document itself), to mutate inside. */
function pickContainer(rng: Rng, doc: { [k: string]: Json }): { [k: string]: Json } {
  let cur = doc;
  for (let i = 0; i < 4 && rng.chance(0.5); i++) {
    const inner = Object.values(cur)
      .flatMap((v) => (Array.isArray(v) ? v : [v]))
      .filter(isObject);
    if (!inner.length) break;
    cur = rng.pick(inner);
  }
  return cur;
}

function isObject(v: Json): v is { [k: string]: Json } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** JSON bytes with invalid UTF-8 inside a string literal (or anywhere). */
export function withInvalidUtf8(rng: Rng, text: string): Uint8Array {
  const quote = text.indexOf('"', rng.int(Math.max(1, text.length)));
  const at = quote >= 0 ? quote + 1 : rng.int(text.length + 1);
  const b = utf8(text);
  const byteAt = utf8(text.slice(0, at)).length;
  return concat(b.subarray(0, byteAt), rng.pick(INVALID_UTF8), b.subarray(byteAt));
}

/** Bytes that are not JSON at all, or JSON cut short. */
export function garbageJson(rng: Rng, valid: string): Uint8Array {
  switch (rng.int(5)) {
    case 0:
      return rng.bytes(rng.range(1, 64));
    case 1:
      return utf8(valid.slice(0, rng.int(Math.max(1, valid.length))));
    case 2:
      return utf8(rng.pick(["{", "}", "[", "{]", "nul", "{'a':1}", '{"a":}', "\ufeff{}", "{}{}", "1 2", "/* */{}"]));
    case 3:
      return concat(utf8(valid), rng.bytes(rng.range(1, 8)));
    default:
      return new Uint8Array(0);
  }
}
