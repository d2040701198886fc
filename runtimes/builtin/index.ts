/**
 * The harnesses built into the host (STATIC in registry terms). `echo` is the default and always
 * served; `chat` is served when a model provider is configured; the test-only harnesses only when
 * the deployment asks for them.
 */
import type { Harness } from "../harness-spi.js";
import { createChatHarness } from "./chat.js";
import { echoHarness } from "./echo.js";
import { holdHarness, toolsHarness } from "./testing.js";

export { echoHarness, echoModel, ECHO_MODEL } from "./echo.js";
export { createChatHarness } from "./chat.js";

export const DEFAULT_HARNESS = "echo";

export interface HarnessResolver {
  get(name: string): Harness | undefined;
  /** Every name served, sorted. */
  names(): string[];
}

export interface BuiltinOptions {
  /** Serve `chat` (a model provider is configured). */
  chat?: boolean;
  /** Model ids `chat` advertises. */
  chatModels?: string[];
  /** Serve the test-only harnesses. */
  testing?: boolean;
}

export function builtinHarnesses(o: BuiltinOptions = {}): HarnessResolver {
  const m = new Map<string, Harness>([["echo", echoHarness]]);
  if (o.chat) m.set("chat", createChatHarness({ models: o.chatModels }));
  if (o.testing) {
    m.set("hold", holdHarness);
    m.set("tools", toolsHarness);
  }
  const names = [...m.keys()].sort();
  return { get: (n) => m.get(n), names: () => names };
}

/** What decides the built-ins a deployment serves: objects/config.ts `HostConfig` has these. */
export interface BuiltinConfig {
  /** A model provider is configured (chat is served). */
  model?: unknown;
  /** The model chat advertises, "" for none. */
  defaultModel: string;
  testHarnesses: boolean;
}

/**
 * The built-ins a deployment with `config` serves: the one definition the Worker (session
 * creation, the registry's STATIC list) and the session objects (which run them) share, so they
 * agree on which names are served and on what each describes.
 */
export function servedBuiltins(config: BuiltinConfig): HarnessResolver {
  return builtinHarnesses({
    chat: config.model !== undefined,
    chatModels: config.defaultModel ? [config.defaultModel] : [],
    testing: config.testHarnesses,
  });
}

/** Every built-in name, served here or not: reserved, so nobody registers or dials in under one. */
export const BUILTIN_NAMES: readonly string[] = builtinHarnesses({ chat: true, testing: true }).names();

/** Why a name is not served, for the INVALID_ARGUMENT message. */
export function unknownHarnessMessage(name: string, served: HarnessResolver): string {
  const hint = name === "chat" ? " (chat needs a model provider: set MODEL_BASE_URL)" : "";
  return `unknown harness "${name}"${hint}: this host serves ${served.names().join(", ")}, and harnesses connected over the tunnel (agentctl harness serve)`;
}
