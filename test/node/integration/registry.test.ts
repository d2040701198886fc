/**
 * The HarnessRegistry end to end against the shared `wrangler dev` (worker/registry-service.ts
 * routed by worker/router.ts, rows in the tenant's Directory object): the shared cases over binary
 * Connect, and what only the JSON wire can say (unknown fields and enum numbers as JSON).
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { describe, expect, inject, it } from "vitest";
import { specDigest } from "../../../proto/canon.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { HarnessRegistry, RegisterOutcome } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { randomHex } from "../../../proto/ids.js";
import { register, registryCases, tunnelSpec, type RegistryClient, type RegistryClients } from "../registry/registry-cases.js";

const url = inject("serverUrl");
const binaryTransport = createConnectTransport({ baseUrl: url, useBinaryFormat: true });
const jsonTransport = createConnectTransport({ baseUrl: url });
const binary: RegistryClient = createClient(HarnessRegistry, binaryTransport);
const binaryClients: RegistryClients = { registry: binary, edge: createClient(EdgeRegistry, binaryTransport) };
const jsonClients: RegistryClients = { registry: createClient(HarnessRegistry, jsonTransport), edge: createClient(EdgeRegistry, jsonTransport) };

describe("HarnessRegistry over the wire", () => registryCases(() => binaryClients));

async function postJson(
  method: string,
  body: unknown,
  service = "agentsessions.v1.HarnessRegistry",
): Promise<{ status: number; body: { code?: string; message?: string } }> {
  const res = await fetch(`${url}/${service}/${method}`, {
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
    const edge = "agentsessions.edge.v1.EdgeRegistry";
    const bad: [unknown, string][] = [
      [{ name, spec: { capabilities: caps, placement_note: "typo" }, placement: { tunnel: {} } }, edge],
      [{ name, spec: { capabilities: caps }, placement: { tunnel: { nope: 1 } } }, edge],
      [{ name, spec: { capabilities: { resumability: 9 } }, placement: { tunnel: {} } }, edge],
      // The old form, our placement inside the contract's spec: no such field there any more.
      [{ name, spec: { tunnel: {}, capabilities: caps } }, "agentsessions.v1.HarnessRegistry"],
    ];
    for (const [body, service] of bad) {
      const r = await postJson("RegisterHarness", body, service);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe("invalid_argument");
    }
    expect((await postJson("GetHarness", { name })).body.code).toBe("not_found");
  });

  it("register: proto3-JSON with proto field names works and gives the same digest as binary", async () => {
    const r = await postJson(
      "RegisterHarness",
      {
        name,
        spec: { capabilities: { resumability: "RESUMABILITY_STATELESS_REPLAY" } },
        placement: { http_runtime: { url: "https://runtime.example/" } },
      },
      "agentsessions.edge.v1.EdgeRegistry",
    );
    expect(r.status).toBe(200);
    const body = r.body as { outcome?: string; harness?: { harness?: { specDigest?: string } } };
    expect(body.outcome).toBe("REGISTER_OUTCOME_CREATED");
    const got = await binaryClients.edge.getHarness({ name });
    expect(body.harness?.harness?.specDigest).toBe(got.harness?.specDigest);
    expect(got.placement?.placement).toEqual({ case: "httpRuntime", value: expect.objectContaining({ url: "https://runtime.example/" }) });
  });

  it("register: the JSON client and the binary client see one registry", async () => {
    const n = `${name}-both`;
    const spec = tunnelSpec("both");
    expect((await register(jsonClients, n, spec)).outcome).toBe(RegisterOutcome.CREATED);
    const again = await register(binaryClients, n, spec);
    expect(again.outcome).toBe(RegisterOutcome.UNCHANGED);
    expect(again.harness!.specDigest).toBe(specDigest(spec.spec).digest);
  });
});
