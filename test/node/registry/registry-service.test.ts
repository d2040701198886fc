/**
 * The HarnessRegistry service in process: worker/registry-service.ts over
 * createRouterTransport, with each tenant's Directory stood in by a RegistryStore on sql.js. Runs
 * the shared cases (registry-cases.ts) plus what is too slow to do against a server.
 */
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { RegistryStore } from "../../../objects/directory/registry-store.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { HarnessRegistry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import {
  createEdgeRegistryService,
  createRegistryService,
  nameFromPageToken,
  pageTokenFromName,
  type RegistryDirectory,
} from "../../../worker/registry-service.js";
import { createTestDb } from "../support/sqljs-db.js";
import { register, registryCases, tunnelSpec, walk, type RegistryClients } from "./registry-cases.js";

/** Each tenant's Directory stood in by a RegistryStore on sql.js, answering as its stub does. */
function fakeDirectories(): (tenant: string) => RegistryDirectory {
  const stores = new Map<string, RegistryStore>();
  return (tenant) => {
    let s = stores.get(tenant);
    if (!s) stores.set(tenant, (s = new RegistryStore(createTestDb())));
    const store = s;
    return {
      registerHarness: async (n, spec, d, placement) => store.register(n, spec, d, placement),
      getHarness: async (n) => store.get(n),
      listHarnesses: async (after, limit, retired) => store.list(after, limit, retired),
      retireHarness: async (n, reason) => store.retire(n, reason),
    };
  };
}

function inProcessClients(directories: (tenant: string) => RegistryDirectory = fakeDirectories()): RegistryClients {
  const transport = createRouterTransport(({ service: route }) => {
    route(HarnessRegistry, createRegistryService({}, directories));
    route(EdgeRegistry, createEdgeRegistryService({}, directories));
  });
  return { registry: createClient(HarnessRegistry, transport), edge: createClient(EdgeRegistry, transport) };
}

const shared = inProcessClients();
describe("HarnessRegistry in process", () => registryCases(() => shared));

describe("HarnessRegistry in process, beyond the shared cases", () => {
  it("list: page_size over 500 is clamped to 500", async () => {
    const clients = inProcessClients();
    const client = clients.registry;
    await Promise.all(Array.from({ length: 505 }, (_, i) => register(clients, `bulk-${i}`, tunnelSpec())));
    const r = await client.listHarnesses({ pageSize: 100_000 });
    expect(r.harnesses.length).toBe(500);
    const all = await walk(client, 500, false);
    expect(all.length).toBe(505 + 1); // and echo
  });

  it("list: an empty registry lists just the statics, with no next page", async () => {
    const r = await inProcessClients().registry.listHarnesses({ pageSize: 1 });
    expect(r.harnesses.map((h) => h.metadata!.name)).toEqual(["echo"]);
    expect(r.nextPageToken).toBe("");
  });

  it('storage failure: INTERNAL "internal error", never the cause\'s text', async () => {
    const boom = async () => {
      throw new Error("SQLITE_FULL: INSERT INTO harnesses ...");
    };
    const broken: RegistryDirectory = { registerHarness: boom, getHarness: boom, listHarnesses: boom, retireHarness: boom };
    const clients = inProcessClients(() => broken);
    const client = clients.registry;
    const calls = [
      register(clients, "x", tunnelSpec()),
      clients.edge.getHarness({ name: "x" }),
      client.getHarness({ name: "x" }),
      client.listHarnesses({}),
      client.retireHarness({ name: "x", reason: "" }),
    ];
    for (const call of calls) {
      const err = await call.then(() => undefined, ConnectError.from);
      expect(err?.code).toBe(Code.Internal);
      expect(err?.rawMessage).toBe("internal error");
    }
  });

  it("page tokens: unpadded base64url of the last name, and only names parse", () => {
    expect(pageTokenFromName("echo")).toBe("ZWNobw");
    expect(nameFromPageToken("ZWNobw")).toBe("echo");
    expect(nameFromPageToken("ZWNobw==")).toBeUndefined();
    expect(nameFromPageToken(pageTokenFromName("a-b"))).toBe("a-b");
    expect(nameFromPageToken(btoa("a/b").replace(/=+$/, ""))).toBeUndefined();
  });
});
