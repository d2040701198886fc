/**
 * The SessionObject's side of the tunnel: a TunnelChannel (runtimes/tunnel) over RPC to the
 * HarnessTunnel object that holds the harness's WebSockets, and the resolver that decides whether a
 * name is a tunnel harness here (it has connected at least once, or is connected now).
 */
import { decodeBinary } from "../../proto/binary-reader.js";
import { encodeBinary } from "../../proto/binary-writer.js";
import { ControllerFrameSchema, HarnessDescriptorSchema } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { isHarnessName } from "../../proto/harness-name.js";
import type { Harness } from "../../runtimes/harness-spi.js";
import type { StreamInbox } from "../../runtimes/tunnel/inbox.js";
import { createTunnelHarness, type TunnelChannel } from "../../runtimes/tunnel/tunnel-harness.js";
import { ApprovalParkedError } from "../controller/errors.js";
import { decisionOf } from "../controller/tool-steps.js";
import { tunnelStub, type Env } from "../env.js";

const DESCRIBE_MS = 10_000;

export function tunnelChannel(env: Env, tenant: string, uid: string, name: string): TunnelChannel {
  const stub = tunnelStub(env, tenant, name);
  return {
    async describe() {
      const r = await stub.describe(uid, DESCRIBE_MS);
      if ("descriptor" in r) return decodeBinary(HarnessDescriptorSchema, r.descriptor);
      return "answered" in r ? { answered: r.answered } : undefined;
    },
    open: (stream) => stub.open(stream, `${tenant}/${uid}`, uid),
    send: (stream, frame) => stub.send(stream, encodeBinary(ControllerFrameSchema, frame)),
    close: async (stream, reason) => {
      await stub.close(stream, reason);
    },
    forget: async (stream) => {
      await stub.forget(stream);
    },
  };
}

/** A tunnel harness when `name` has been served here (so a restart of the harness is "unavailable", not "unknown"). */
export async function resolveTunnelHarness(env: Env, name: string, session: { tenant: string; uid: string }, inbox: StreamInbox): Promise<Harness | undefined> {
  if (!isHarnessName(name)) return undefined;
  const status = await tunnelStub(env, session.tenant, name).status();
  if (!status.known && status.connected === 0) return undefined;
  return tunnelHarness(env, name, session, inbox);
}

/** The tunnel harness for `name`, whether or not one is connected right now. */
export function tunnelHarness(env: Env, name: string, session: { tenant: string; uid: string }, inbox: StreamInbox): Harness {
  return createTunnelHarness({
    name,
    channel: tunnelChannel(env, session.tenant, session.uid, name),
    inbox,
    decisionOf,
    isPark: (e): e is ApprovalParkedError => e instanceof ApprovalParkedError,
  });
}
