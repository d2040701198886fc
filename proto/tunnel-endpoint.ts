/**
 * Where and how a harness dials the host (docs/tunnel.md "Connecting"): the WebSocket path and
 * the subprotocol it must ask for. One definition for the Worker's tunnel route, the tunnel object,
 * the runtime dialback URL and the harness SDK alike.
 */
export const TUNNEL_PATH = "/harness/v1/connect";
export const TUNNEL_SUBPROTOCOL = "agentsessions.harness.v1";
