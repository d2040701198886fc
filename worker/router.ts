/**
 * The Connect router: every service this host serves, over the Connect protocol (JSON and binary),
 * and gRPC-Web, with the request log interceptor. Plain gRPC is refused earlier
 * (worker/request-check.ts): a Worker cannot send the HTTP trailers its status needs.
 */
import { createConnectRouter, type ContextValues } from "@connectrpc/connect";
import { universalServerRequestFromFetch, universalServerResponseToFetch, type UniversalHandler } from "@connectrpc/connect/protocol";
import { Audit } from "../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { Blobs } from "../proto/gen/agentsessions/edge/v1/blobs_pb.js";
import { EdgeRegistry } from "../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { Retention } from "../proto/gen/agentsessions/edge/v1/retention_pb.js";
import { Tail } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { HarnessRegistry } from "../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { Sessions } from "../proto/gen/agentsessions/v1/session_pb.js";
import { decodeBinary } from "../proto/binary-reader.js";
import { HarnessDescriptorSchema } from "../proto/gen/agentsessions/v1/harness_pb.js";
import { directoryStub, tunnelStub, type Env } from "../objects/index.js";
import { runtimeToken } from "../objects/config.js";
import { createHttpRuntime } from "../runtimes/http/index.js";
import type { LimitGuards } from "./limits.js";
import { classifyFaults } from "./faults.js";
import { requestLog } from "./request-log.js";
import { strictNumbers } from "./strict-numbers.js";
import { createAuditService } from "./audit-service.js";
import { createBlobsService } from "./blobs-service.js";
import { createEdgeRegistryService, createRegistryService, type RegistryServiceOptions } from "./registry-service.js";
import { createRetentionService } from "./retention-service.js";
import { createSessionsService } from "./sessions-service.js";
import { createTailService } from "./tail-service.js";

export type RpcHandlers = Map<string, UniversalHandler>;

/**
 * The router for requests worker/rpc-entry.ts has already authenticated, authorized, admitted at
 * the tenant's rate and read within the size limit.
 */
export function createRpcHandlers(env: Env, guards: LimitGuards): RpcHandlers {
  const router = createConnectRouter({
    // classifyFaults is innermost, so the log and the caller see INTERNAL for an unexpected throw.
    interceptors: [requestLog, strictNumbers, classifyFaults],
    // Checked before the body reaches the router too (rpc-entry.ts); this bounds what it decodes.
    readMaxBytes: guards.limits.maxRequestBytes,
    // Typos such as "input" for "inputs" must fail loudly, not run an inputless turn.
    jsonOptions: { ignoreUnknownFields: false },
  });
  router.service(Sessions, createSessionsService(env, guards));
  router.service(Audit, createAuditService(env));
  router.service(Tail, createTailService(env));
  router.service(Retention, createRetentionService(env));
  router.service(Blobs, createBlobsService(env));
  const registry: RegistryServiceOptions = {
    // Live describe of a tunnel harness: whatever answers on a general connection right now.
    observe: async (tenant, name, placement) => {
      const p = placement?.placement;
      if (p?.case === "httpRuntime") {
        const runtime = createHttpRuntime({ baseUrl: p.value.url, token: runtimeToken(env) });
        return { descriptor: await runtime.describe(name, AbortSignal.timeout(10_000)) };
      }
      if (p?.case !== "tunnel") return { error: "this placement cannot be described here" };
      const r = await tunnelStub(env, tenant, name).describe("", 10_000);
      if ("descriptor" in r) return { descriptor: decodeBinary(HarnessDescriptorSchema, r.descriptor) };
      return { error: "answered" in r ? `the harness answered Describe with an error: ${r.answered}` : r.error };
    },
  };
  const directoryOf = (tenant: string) => directoryStub(env, tenant);
  router.service(HarnessRegistry, createRegistryService(env, directoryOf, registry));
  router.service(EdgeRegistry, createEdgeRegistryService(env, directoryOf, registry));
  return new Map(router.handlers.map((h) => [h.requestPath, h]));
}

export async function serveRpc(handler: UniversalHandler, req: Request, values: ContextValues): Promise<Response> {
  const ureq = universalServerRequestFromFetch(req, {});
  const ures = await handler({ ...ureq, contextValues: values });
  return universalServerResponseToFetch(ures);
}
