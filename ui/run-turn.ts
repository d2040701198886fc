/**
 * The "run a turn" form of the session page: one user message through Exec, with the head on
 * screen as expected_last_seq (so a turn never lands on a journal the reader has not seen), the
 * records fed to the timeline as they commit, and the model's streamed text shown while it runs
 * (deltas are never journaled: they go when the turn ends).
 */
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../proto/messages.js";
import { api } from "./api.js";
import { h } from "./dom.js";
import * as notices from "./notices.js";

export interface TurnRunnerHooks {
  head(): bigint;
  onRecord(r: LogRecord): void;
  onSession(s: Session): void;
  onDone(): void;
}

export interface TurnRunner {
  readonly el: HTMLElement;
  /** Why a turn cannot run now ("" when it can). */
  setBlocked(why: string): void;
  stop(): void;
}

export function createTurnRunner(uid: string, hooks: TurnRunnerHooks): TurnRunner {
  const input = h("input", { id: "turn-text", name: "text", autocomplete: "off", required: true, placeholder: "Message for a new turn" });
  const run = h("button", { type: "submit", class: "primary" }, "Run turn");
  const hint = h("p", { class: "muted hint" });
  const streamText = h("pre", {});
  const stream = h("div", { class: "stream", hidden: true, "aria-live": "polite" }, h("p", { class: "muted" }, "streaming…"), streamText);
  let stopped = false;
  let running = false;
  let blocked = "";
  const sync = () => {
    run.disabled = running || blocked !== "";
    input.disabled = blocked !== "";
    hint.textContent = blocked;
  };

  const form = h("form", { class: "run-turn", "aria-label": "Run a turn" }, h("label", { for: "turn-text" }, "Message"), input, run);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value;
    input.value = "";
    running = true;
    sync();
    stream.hidden = false;
    streamText.textContent = "";
    try {
      const updates = api().raw.exec({ session: uid, inputs: [userText(text)], expectedLastSeq: hooks.head() });
      for await (const u of updates) {
        if (stopped) continue; // keep reading so the turn's stream completes; the view is gone
        if (u.update.case === "record") hooks.onRecord(u.update.value);
        else if (u.update.case === "session") hooks.onSession(u.update.value);
        else if (u.update.case === "delta") streamText.textContent += u.update.value.chunk;
      }
      notices.ok("exec");
      if (!stopped) notices.info("Turn finished.");
    } catch (err) {
      if (!stopped) notices.fail("exec", "Run turn", err);
    } finally {
      running = false;
      stream.hidden = true;
      sync();
      if (!stopped) hooks.onDone();
    }
  });
  return {
    el: h("div", { class: "runner" }, form, hint, stream),
    setBlocked(why) {
      blocked = why;
      sync();
    },
    stop() {
      stopped = true;
    },
  };
}
