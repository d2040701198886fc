/**
 * Strings read from protobuf keep a leading U+FEFF. protobuf-es decodes a string field with a
 * TextDecoder made with the default options, and that decoder drops a byte order mark at the
 * start of what it decodes: a text that began with U+FEFF (a file pasted with its mark, say) came
 * back one character short. The journal hashed the text as the caller sent it, so every check that
 * decodes the stored bytes (Audit.Verify, `agentctl verify`, the inspector) then reported the
 * record as altered, and a client reading it through Replay got a different text than was sent.
 *
 * Importing this module sets protobuf-es's text encoding, which is one setting for the whole
 * process (configureTextEncoding), to decoders that keep the mark and are otherwise the same:
 * lenient, or strict when protobuf-es asks for it (invalid UTF-8 throws). proto/binary-reader.ts
 * imports it, so every decoder in this repository and connect-es's own reads use it. Tested in
 * test/node/proto/text-encoding.test.ts.
 */
import { configureTextEncoding } from "@bufbuild/protobuf/wire";

const encoder = new TextEncoder();
const lenient = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

configureTextEncoding({
  encodeUtf8: (text) => encoder.encode(text) as Uint8Array<ArrayBuffer>,
  decodeUtf8: (bytes, isStrict) => (isStrict ? strict : lenient).decode(bytes),
  // As protobuf-es checks it: a lone surrogate is the only thing a JavaScript string holds that UTF-8 cannot.
  checkUtf8: (text) => {
    try {
      encodeURIComponent(text);
      return true;
    } catch {
      return false;
    }
  },
});
