/**
 * How a SessionObject resolves a harness name that is not built in: a registration in the tenant's
 * registry decides (a tunnel placement is served over the tunnel; its descriptor_id is enforced),
 * else a name a harness has connected under is served over the tunnel unregistered.
 */
import { decodeBinary } from "../../proto/binary-reader.js";
import { EdgePlacementSchema } from "../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { HarnessSpecSchema } from "../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import type { StreamInbox } from "../../runtimes/tunnel/inbox.js";
import { runtimeToken } from "../config.js";
import { directoryStub, type Env } from "../env.js";
import type { ServedHarness } from "../session/state.js";
import { createHttpRuntime } from "../../runtimes/http/index.js";
import { tunnelStub } from "../env.js";
import type { PlacingRuntime } from "../session/state.js";
import { resolveTunnelHarness, tunnelHarness } from "./tunnel-channel.js";
import { TUNNEL_PATH } from "../../proto/tunnel-endpoint.js";

export async function resolveRemoteHarness(
  env: Env,
  name: string,
  session: { tenant: string; uid: string },
  inbox: StreamInbox,
): Promise<ServedHarness | undefined> {
  const reg = await directoryStub(env, session.tenant).lookupHarness(name);
  if (!reg) {
    const harness = await resolveTunnelHarness(env, name, session, inbox);
    return harness && { harness };
  }
  const spec = decodeBinary(HarnessSpecSchema, reg.spec);
  // Our placements sit beside the spec (agentsessions.edge.v1.EdgePlacement), not in it.
  const placement = reg.placement && decodeBinary(EdgePlacementSchema, reg.placement).placement;
  switch (placement?.case) {
    case "tunnel":
      return { harness: tunnelHarness(env, name, session, inbox), registered: true, expectId: spec.descriptorId || undefined };
    case "httpRuntime":
      return {
        harness: tunnelHarness(env, name, session, inbox),
        registered: true,
        expectId: spec.descriptorId || undefined,
        runtime: placingRuntime(env, placement.value.url, name, session),
      };
    default:
      // Registered for a placement this host cannot run (yet): unknown here.
      return undefined;
  }
}

/**
 * The backend of a registered http_runtime harness. Its incarnations dial back to this host's
 * tunnel (PUBLIC_URL) with a one-time token minted for this session, or for a memory fork's child
 * (`sessionUid`): each clone dials back as its own session.
 */
function placingRuntime(env: Env, url: string, name: string, session: { tenant: string; uid: string }): PlacingRuntime {
  const rt = createHttpRuntime({ baseUrl: url, name: `http runtime at ${new URL(url).host}`, token: runtimeToken(env) });
  return Object.assign(rt, {
    async dialback(_harness: string, sessionUid = session.uid) {
      if (!env.PUBLIC_URL) throw new Error("set PUBLIC_URL (this host's base URL) so runtime incarnations can dial back");
      const token = await tunnelStub(env, session.tenant, name).mintToken(`${session.tenant}/${sessionUid}`);
      return { tunnelUrl: `${env.PUBLIC_URL.replace(/\/+$/, "")}${TUNNEL_PATH}?name=${encodeURIComponent(name)}`, token };
    },
  });
}
