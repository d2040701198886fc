declare namespace Cloudflare {
  interface Env {
    SESSIONS: DurableObjectNamespace<import("../../objects/session/object").SessionObject>;
    DIRECTORY: DurableObjectNamespace<import("../../objects/directory/object").Directory>;
    HARNESS_TUNNELS: DurableObjectNamespace<import("../../objects/tunnel/object").HarnessTunnel>;
  }
}
