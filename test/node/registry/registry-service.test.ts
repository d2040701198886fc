/**
 * The HarnessRegistry service in process (STYLE 29): worker/registry-service.ts over
 * createRouterTransport, with each tenant's Directory stood in by a RegistryStore on sql.js. Runs
 * the shared cases (registry-cases.ts) plus what is too slow to do against a server.
 */
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { RegistryStore } from "../../../objects/directory/registry-store.js";
import { HarnessRegistry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { createRegistryService, nameFromPageToken, pageTokenFromName, type RegistryDirectory } from "../../../worker/registry-service.js";
import { createTestDb } from "../support/sqljs-db.js";
import { registryCases, tunnelSpec, walk, type RegistryClient } from "./registry-cases.js";

/** Each tenant's Directory stood in by a RegistryStore on sql.js, answering as its stub does. */
function fakeDirectories(): (tenant: string) => RegistryDirectory {
  const stores = new Map<string, RegistryStore>();
  return (tenant) => {
    let s = stores.get(tenant);
    if (!s) stores.set(tenant, (s = new RegistryStore(createTestDb())));
    const store = s;
    return {
      registerHarness: async (n, spec, d) => store.register(n, spec, d),
      getHarness: async (n) => store.get(n),
      listHarnesses: async (after, limit, retired) => store.list(after, limit, retired),
      retireHarness: async (n, reason) => store.retire(n, reason),
    };
  };
}

function inProcessClient(): RegistryClient {
  const service = createRegistryService({}, fakeDirectories());
  return createClient(
    HarnessRegistry,
    createRouterTransport(({ service: route }) => route(HarnessRegistry, service)),
  );
}

const shared = inProcessClient();
describe("HarnessRegistry in process", () => registryCases(() => shared));

describe("HarnessRegistry in process, beyond the shared cases", () => {
  it("list: page_size over 500 is clamped to 500", async () => {
    const client = inProcessClient();
    await Promise.all(Array.from({ length: 505 }, (_, i) => client.registerHarness({ name: `bulk-${i}`, spec: tunnelSpec() })));
    const r = await client.listHarnesses({ pageSize: 100_000 });
    expect(r.harnesses.length).toBe(500);
    const all = await walk(client, 500, false);
    expect(all.length).toBe(505 + 1); // and echo
  });

  it("list: an empty registry lists just the statics, with no next page", async () => {
    const r = await inProcessClient().listHarnesses({ pageSize: 1 });
    expect(r.harnesses.map((h) => h.metadata!.name)).toEqual(["echo"]);
    expect(r.nextPageToken).toBe("");
  });

  it('storage failure: INTERNAL "internal error", never the cause\'s text', async () => {
    const boom = async () => {
      throw new Error("SQLITE_FULL: INSERT INTO harnesses ...");
    };
    const broken: RegistryDirectory = { registerHarness: boom, getHarness: boom, listHarnesses: boom, retireHarness: boom };
    const client = createClient(
      HarnessRegistry,
      createRouterTransport(({ service }) =>
        service(
          HarnessRegistry,
          createRegistryService({}, () => broken),
        ),
      ),
    );
    const calls = [
      client.registerHarness({ name: "x", spec: tunnelSpec() }),
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
