/**
 * The SDK's Node-only parts (`@agentsessions-edge/sdk/node`): kept apart from sdk/index.ts, which
 * browsers and Workers import too.
 */
export { nodeFetch } from "./http-fetch.js";
