/** Where harnesses connect (docs/tunnel.md); shared by the Worker's route and runtime dialbacks. */
export const TUNNEL_PATH_FOR_DIALBACK = "/harness/v1/connect";
