/**
 * How a SessionObject resolves a harness name that is not built in: a registration in the tenant's
 * registry decides (a tunnel placement is served over the tunnel; its descriptor_id is enforced),
 * else a name a harness has connected under is served over the tunnel unregistered.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { HarnessSpecSchema } from "../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import type { StreamInbox } from "../../runtimes/tunnel/inbox.js";
import { directoryStub, type Env } from "../env.js";
import type { ServedHarness } from "../session/session-state.js";
import { resolveTunnelHarness, tunnelHarness } from "./tunnel-channel.js";

export async function resolveRemoteHarness(env: Env, name: string, session: { tenant: string; uid: string }, inbox: StreamInbox): Promise<ServedHarness | undefined> {
  const reg = await directoryStub(env, session.tenant).lookupHarness(name);
  if (!reg) {
    const harness = await resolveTunnelHarness(env, name, session, inbox);
    return harness && { harness };
  }
  const spec = fromBinary(HarnessSpecSchema, reg.spec);
  switch (spec.placement.case) {
    case "tunnel":
      return { harness: tunnelHarness(env, name, session, inbox), registered: true, expectId: spec.descriptorId || undefined };
    default:
      // Registered for a placement this host cannot run (yet): unknown here.
      return undefined;
  }
}
