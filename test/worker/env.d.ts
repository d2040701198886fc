declare namespace Cloudflare {
  interface Env {
    SESSIONS: DurableObjectNamespace<import("../../objects/session-object").SessionObject>;
    DIRECTORY: DurableObjectNamespace<import("../../objects/directory").Directory>;
  }
}
