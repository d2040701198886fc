/**
 * One rule for harness names and one tunnel endpoint (proto/harness-name.ts, proto/tunnel-endpoint.ts):
 * the harness SDK, the CLI's runtime flags and the host's registry all decide a name the same way,
 * so the SDK never dials under a name the host refuses (it once accepted "a-").
 */
import { describe, expect, it } from "vitest";
import { isHarnessName } from "../../../proto/harness-name.js";
import { TUNNEL_PATH, TUNNEL_SUBPROTOCOL } from "../../../proto/tunnel-endpoint.js";
import { parseHarnessFlag } from "../../../runtimes/node/harness-modules.js";
import * as sdk from "../../../sdk/harness/index.js";
import { isHarnessName as registryAccepts } from "../../../worker/registry-service.js";

const ACCEPTED = ["a", "0", "echo-2", "0x", "a-b-c", "a".repeat(63)];
const REFUSED = ["", "a-", "-a", "-", "A", "a_b", "a.b", "a b", "é", "a".repeat(64), "echo\n"];

const sdkDials = (name: string) => {
  try {
    sdk.tunnelUrlFromBase("http://127.0.0.1:8787", name);
    return true;
  } catch {
    return false;
  }
};
const flagParses = (name: string) => {
  try {
    parseHarnessFlag(`${name}=./h.ts`, "/tmp");
    return true;
  } catch {
    return false;
  }
};

describe("harness names", () => {
  it("isHarnessName: a DNS label, 1 to 63 lowercase letters, digits and '-', not starting or ending with '-'", () => {
    for (const n of ACCEPTED) expect(isHarnessName(n), n).toBe(true);
    for (const n of REFUSED) expect(isHarnessName(n), JSON.stringify(n)).toBe(false);
  });

  it("the SDK, the CLI's --harness flag and the registry accept exactly what the host accepts", () => {
    for (const n of [...ACCEPTED, ...REFUSED]) {
      const host = isHarnessName(n);
      expect(registryAccepts(n), `registry ${JSON.stringify(n)}`).toBe(host);
      expect(sdk.isHarnessName(n), `sdk ${JSON.stringify(n)}`).toBe(host);
      expect(sdkDials(n), `sdk dial ${JSON.stringify(n)}`).toBe(host);
      expect(flagParses(n), `--harness ${JSON.stringify(n)}`).toBe(host);
    }
  });

  it("tunnel endpoint: the SDK dials the path and asks for the subprotocol the host serves", () => {
    expect(sdk.TUNNEL_PATH).toBe(TUNNEL_PATH);
    expect(sdk.TUNNEL_SUBPROTOCOL).toBe(TUNNEL_SUBPROTOCOL);
    expect(new URL(sdk.tunnelUrlFromBase("https://h.example/", "a1")).pathname).toBe(TUNNEL_PATH);
  });
});
