/**
 * A record's blobs on screen (docs/blobs.md): each part the host stored out of the row is listed
 * with what it stands for, its size and digest, and an "Open" button that fetches it through
 * Blobs/GetBlob (the SDK checks its SHA-256) and opens it in a new tab. Used by record-view.ts.
 */
import { blobRefsOf, type BlobReference } from "../proto/blob-ref.js";
import type { Event } from "../proto/gen/agentsessions/v1/common_pb.js";
import { api } from "./api.js";
import { type Child, h } from "./dom.js";
import { errorLine } from "./errors.js";

const SITE_WORDS: Record<string, string> = {
  text: "text",
  file: "file",
  reasoning: "reasoning blob",
  "tool_call.args": "tool arguments",
  "tool_result.output": "tool output",
};

export function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The blobs `ev` references, or nothing when it references none. */
export function blobsBlock(ev: Event, uid: string): Child {
  const refs = blobRefsOf(ev);
  if (refs.length === 0) return null;
  return h(
    "div",
    { class: "rec-body blobs" },
    refs.map((r) => blobLine(r, uid)),
  );
}

function blobLine(ref: BlobReference, uid: string): HTMLElement {
  const status = h("span", { class: "muted", role: "status" }, "");
  const open = h("button", { type: "button", class: "small", "aria-label": `Open the ${bytesText(ref.bytes)} blob sha256:${ref.sha256}` }, "Open");
  open.addEventListener("click", async () => {
    open.setAttribute("disabled", "");
    status.textContent = "fetching…";
    try {
      const data = await api().getBlob(uid, ref.sha256);
      const url = URL.createObjectURL(new Blob([data as Uint8Array<ArrayBuffer>], { type: ref.mime || "application/octet-stream" }));
      window.open(url, "_blank", "noopener");
      status.textContent = "checked: SHA-256 matches";
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (e) {
      status.textContent = errorLine("Opening the blob", e);
    } finally {
      open.removeAttribute("disabled");
    }
  });
  return h(
    "p",
    { class: "blob", "data-sha256": ref.sha256 },
    `${SITE_WORDS[ref.site] ?? "part"} stored as a blob: ${bytesText(ref.bytes)} `,
    h("code", { title: `sha256:${ref.sha256}` }, `sha256:${ref.sha256.slice(0, 12)}…`),
    " ",
    open,
    " ",
    status,
  );
}
