/**
 * The Connect router: every service this host serves, over the Connect protocol (JSON and binary),
 * and gRPC-Web, with the request log interceptor. Plain gRPC is refused earlier
 * (worker/request-check.ts): a Worker cannot send the HTTP trailers its status needs.
 */
import { createConnectRouter, type ContextValues } from "@connectrpc/connect";
import { universalServerRequestFromFetch, universalServerResponseToFetch, type UniversalHandler } from "@connectrpc/connect/protocol";
import { Audit } from "../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { HarnessRegistry } from "../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { Sessions } from "../proto/gen/agentsessions/v1/session_pb.js";
import { fromBinary } from "@bufbuild/protobuf";
import { HarnessDescriptorSchema } from "../proto/gen/agentsessions/v1/harness_pb.js";
import { directoryStub, tunnelStub, type Env } from "../objects/index.js";
import { runtimeToken } from "../objects/config.js";
import { createHttpRuntime } from "../runtimes/http/index.js";
import { authorize } from "./auth/index.js";
import { createLimitGuards } from "./limits.js";
import { classifyFaults } from "./faults.js";
import { requestLog } from "./request-log.js";
import { createAuditService } from "./audit-service.js";
import { createRegistryService } from "./registry-service.js";
import { createSessionsService } from "./sessions-service.js";

export type RpcHandlers = Map<string, UniversalHandler>;

export function createRpcHandlers(env: Env): RpcHandlers {
  const guards = createLimitGuards(env);
  const router = createConnectRouter({
    // Logged first, so refusals are logged too; nothing past authorize runs for a refused caller.
    // classifyFaults is innermost, so the log and the caller see INTERNAL for an unexpected throw.
    interceptors: [requestLog, authorize, guards.rateLimit, classifyFaults],
    // Larger requests are refused before they are parsed.
    readMaxBytes: guards.limits.maxRequestBytes,
    // Typos such as "input" for "inputs" must fail loudly, not run an inputless turn.
    jsonOptions: { ignoreUnknownFields: false },
  });
  router.service(Sessions, createSessionsService(env, guards));
  router.service(Audit, createAuditService(env));
  router.service(
    HarnessRegistry,
    createRegistryService(env, (tenant) => directoryStub(env, tenant), {
      // Live describe of a tunnel harness: whatever answers on a general connection right now.
      observe: async (tenant, name, spec) => {
        if (spec?.placement.case === "httpRuntime") {
          const runtime = createHttpRuntime({ baseUrl: spec.placement.value.url, token: runtimeToken(env) });
          return { descriptor: await runtime.describe(name, AbortSignal.timeout(10_000)) };
        }
        if (spec?.placement.case !== "tunnel") return { error: "this placement cannot be described here" };
        const r = await tunnelStub(env, tenant, name).describe("", 10_000);
        if ("descriptor" in r) return { descriptor: fromBinary(HarnessDescriptorSchema, r.descriptor) };
        return { error: "answered" in r ? `the harness answered Describe with an error: ${r.answered}` : r.error };
      },
    }),
  );
  return new Map(router.handlers.map((h) => [h.requestPath, h]));
}

export async function serveRpc(handler: UniversalHandler, req: Request, values: ContextValues): Promise<Response> {
  const ureq = universalServerRequestFromFetch(req, {});
  const ures = await handler({ ...ureq, contextValues: values });
  return universalServerResponseToFetch(ures);
}
