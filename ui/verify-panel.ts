/**
 * "Verify chain" in the browser: re-read the whole journal with Replay (what the server stores,
 * not what the page has shown) and recompute every link and content hash here, with the same
 * rules the host and the CLI use (proto/chain-check.ts) and WebCrypto's SHA-256. The verdict names
 * the head it covers; once newer records arrive it says so instead of still claiming VERIFIED.
 */
import { create } from "@bufbuild/protobuf";
import { verifyChainAsync } from "../proto/chain-check.js";
import { EventSchema } from "../proto/gen/agentsessions/v1/common_pb.js";
import { api, records } from "./api.js";
import { fill, h } from "./dom.js";
import { errorLine } from "./errors.js";
import { count, shortHash } from "./format.js";

export interface VerifyPanel {
  readonly el: HTMLElement;
  /** The page now shows records up to `head`. */
  noteHead(head: bigint): void;
}

export function createVerifyPanel(uid: string, onBroken: (seq: bigint) => void): VerifyPanel {
  const out = h("p", { class: "verdict", role: "status", "aria-live": "polite" });
  const button = h("button", { type: "button" }, "Verify chain");
  let verifiedHead: bigint | undefined;
  let shownHead = 0n;
  let okText = "";

  const showStale = () => {
    if (verifiedHead === undefined || shownHead <= verifiedHead) return;
    const newer = shownHead - verifiedHead;
    out.className = "verdict stale";
    fill(out, `Verified up to seq ${verifiedHead} only: ${newer} newer record${newer === 1n ? "" : "s"} since. `, okText);
  };

  button.addEventListener("click", async () => {
    if (!globalThis.crypto?.subtle) {
      out.className = "verdict bad";
      fill(out, "Cannot verify here: browsers offer WebCrypto only on https or on localhost.");
      return;
    }
    button.disabled = true;
    out.className = "verdict";
    fill(out, "Verifying every record in this browser…");
    try {
      const [recs, session] = await Promise.all([records(uid), api().get(uid)]);
      const report = await verifyChainAsync(
        recs.map((r) => ({ seq: r.seq, prevHash: r.prevHash, hash: r.contentHash, event: r.event ?? create(EventSchema) })),
      );
      const head = recs[recs.length - 1]?.seq ?? 0n;
      if (!report.ok) {
        verifiedHead = undefined;
        out.className = "verdict bad";
        fill(out, `BROKEN at seq ${report.firstBadSeq}: ${report.reason}. This journal was altered after it was written.`);
        onBroken(report.firstBadSeq);
      } else if (head < session.lastSeq) {
        verifiedHead = undefined;
        out.className = "verdict bad";
        fill(out, `The chain links, but ends at seq ${head} while the session's last seq is ${session.lastSeq}: records are missing.`);
      } else {
        verifiedHead = head;
        out.className = "verdict good";
        okText = `${count(report.records)} records, head hash ${shortHash(report.headHash)}…`;
        fill(out, `VERIFIED in this browser: ${okText} up to seq ${head}.`);
        showStale();
      }
    } catch (e) {
      out.className = "verdict bad";
      fill(out, errorLine("Verify", e));
    } finally {
      button.disabled = false;
    }
  });

  return {
    el: h("div", { class: "verify" }, button, out),
    noteHead(head) {
      shownHead = head;
      showStale();
    },
  };
}
