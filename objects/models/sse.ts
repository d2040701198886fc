/**
 * Reads the `data:` payloads of a server-sent-events response, one event at a time.
 *
 * The bytes are decoded with one streaming TextDecoder (a character split between two chunks is
 * kept for the next), not piped through a TextDecoderStream: a model's answer arrives as many
 * small chunks, and the extra stream cost each of them a step of its own (docs/performance.md,
 * "Thirty-first round").
 */
export async function* readSse(res: Response, signal: AbortSignal): AsyncGenerator<string> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let data: string[] = [];
  try {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line === "") {
          if (data.length) yield data.join("\n");
          data = [];
        } else if (line.startsWith("data:")) {
          data.push(line.slice(5).replace(/^ /, ""));
        }
      }
    }
    if (data.length) yield data.join("\n");
  } finally {
    reader.releaseLock();
  }
}
