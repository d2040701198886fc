declare namespace Cloudflare {
  interface Env {
    SESSIONS: DurableObjectNamespace<import("../../objects/session-object").SessionObject>;
    DIRECTORY: DurableObjectNamespace<import("../../objects/directory").Directory>;
    HARNESS_TUNNELS: DurableObjectNamespace<import("../../objects/harness-tunnel").HarnessTunnel>;
  }
}
