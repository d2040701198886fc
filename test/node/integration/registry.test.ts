/**
 * The HarnessRegistry end to end against the shared `wrangler dev` (worker/registry-service.ts
 * routed by worker/router.ts, rows in the tenant's Directory object): the shared cases over binary
 * Connect, and what only the JSON wire can say (unknown fields and enum numbers as JSON).
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { describe, expect, inject, it } from "vitest";
import { specDigest } from "../../../proto/canon.js";
import { HarnessRegistry, RegisterOutcome } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { randomHex } from "../../../proto/ids.js";
import { registryCases, tunnelSpec, type RegistryClient } from "../registry/registry-cases.js";

const url = inject("serverUrl");
const binary: RegistryClient = createClient(HarnessRegistry, createConnectTransport({ baseUrl: url, useBinaryFormat: true }));
const json: RegistryClient = createClient(HarnessRegistry, createConnectTransport({ baseUrl: url }));

describe("HarnessRegistry over the wire", () => registryCases(() => binary));

async function postJson(method: string, body: unknown): Promise<{ status: number; body: { code?: string; message?: string } }> {
  const res = await fetch(`${url}/agentsessions.v1.HarnessRegistry/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
}

describe("HarnessRegistry over JSON", () => {
  const name = `j${randomHex(3)}`;

  it("register: JSON with an unknown spec field or enum number is invalid_argument, nothing stored", async () => {
    const caps = { resumability: "RESUMABILITY_STATELESS_REPLAY" };
    const bad = [
      { name, spec: { tunnel: {}, capabilities: caps, placement_note: "typo" } },
      { name, spec: { tunnel: { nope: 1 }, capabilities: caps } },
      { name, spec: { tunnel: {}, capabilities: { resumability: 9 } } },
    ];
    for (const body of bad) {
      const r = await postJson("RegisterHarness", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe("invalid_argument");
    }
    expect((await postJson("GetHarness", { name })).body.code).toBe("not_found");
  });

  it("register: proto3-JSON with proto field names works and gives the same digest as binary", async () => {
    const r = await postJson("RegisterHarness", {
      name,
      spec: { http_runtime: { url: "https://runtime.example/" }, capabilities: { resumability: "RESUMABILITY_STATELESS_REPLAY" } },
    });
    expect(r.status).toBe(200);
    const body = r.body as { outcome?: string; harness?: { specDigest?: string } };
    expect(body.outcome).toBe("REGISTER_OUTCOME_CREATED");
    const got = await binary.getHarness({ name });
    expect(body.harness?.specDigest).toBe(got.specDigest);
    expect(got.spec?.placement).toEqual({ case: "httpRuntime", value: expect.objectContaining({ url: "https://runtime.example/" }) });
  });

  it("register: the JSON client and the binary client see one registry", async () => {
    const n = `${name}-both`;
    const spec = tunnelSpec("both");
    expect((await json.registerHarness({ name: n, spec })).outcome).toBe(RegisterOutcome.CREATED);
    const again = await binary.registerHarness({ name: n, spec });
    expect(again.outcome).toBe(RegisterOutcome.UNCHANGED);
    expect(again.harness!.specDigest).toBe(specDigest(spec).digest);
  });
});
