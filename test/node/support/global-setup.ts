/**
 * Starts one shared `wrangler dev` for the node project's integration tests and hands its URL to
 * them (`inject("serverUrl")`). Tests that restart or kill a server start their own.
 */
import type { TestProject } from "vitest/node";
import { startDevServer, type DevServer } from "../../../scripts/dev-server.js";

let server: DevServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startDevServer();
  project.provide("serverUrl", server.url);
}

export async function teardown(): Promise<void> {
  await server?.dispose();
}

declare module "vitest" {
  export interface ProvidedContext {
    serverUrl: string;
  }
}
