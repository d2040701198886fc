/**
 * cli/: the agentctl command-line client. Everything but `runCli` and `main` is internal.
 */
export { runCli, main, type CliIo } from "./main.js";
