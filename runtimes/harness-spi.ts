/**
 * The Harness SPI (docs/contract.md §6.2): what an agent implements to run under a session host.
 *
 * A harness is two methods. `describe` says who it is and what it needs; `run` executes exactly one
 * execution (turn) and reaches the world only through its `sink`: the host records every model call,
 * tool call, output and usage before the harness observes it. Plain TypeScript with no Cloudflare
 * imports: the built-in harnesses (runtimes/builtin) and the Node harness SDK (sdk/harness) share it.
 * @experimental
 */
import type { Event, Message, ToolCall, ToolDefinition, ToolChoice, ToolResult, Usage } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { HarnessDescriptor } from "../proto/gen/agentsessions/v1/harness_pb.js";

export interface Harness {
  describe(signal?: AbortSignal): Promise<HarnessDescriptor> | HarnessDescriptor;
  /** Resolves when the execution completed; a rejection fails it (an ERROR is journaled). */
  run(start: HarnessStart, sink: EventSink): Promise<void>;
  /**
   * Set by a harness that runs inside the host and reaches nothing but its sink (the built-in
   * echo and chat): nothing outside the host can see what it does between two sink calls, so the
   * host may commit its OUTPUT and USAGE records with the turn's next commit instead of one by one
   * (docs/behaviour.md §1.5 "When records commit"). Never set it on a harness with other effects.
   */
  readonly sinkOnly?: boolean;
}

export interface HarnessStart {
  sessionUid: string;
  executionId: string;
  /** Opaque per-execution config, byte-exact (journaled in EXECUTION_START; never a secret channel). */
  config: Uint8Array;
  /**
   * The journal before this execution's EXECUTION_START: every event, or, once the session has a
   * compaction point, that point (the summary's OUTPUT and its LIFECYCLE(BASELINE) marker) and the
   * events after the seq it covers. `compactionOf(history)` (runtimes/compaction.ts) reads it.
   * The host's own array (the next turn's history grows it in place): read it during the turn,
   * never change it or keep it past the turn.
   */
  history: Event[];
  /** This execution's inputs. */
  inputs: Message[];
  resumeFromSeq: bigint;
  /** Aborted when the turn is canceled or its deadline passes. */
  signal: AbortSignal;
}

export interface ToolCallOptions {
  /** REQUIRES_APPROVAL only: deny the call if no decision arrives within this many seconds. */
  approvalTimeoutSeconds?: number;
}

export interface ModelRequest {
  model: string;
  messages: Message[];
  params?: Record<string, string>;
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
}

/**
 * Marks the first `length` entries of `messages` as sealed: from now on they are never replaced or
 * removed, and the array only changes past them (a later seal of the same array may only reach
 * further). A harness that hands the same array to `model` turn after turn, growing it, seals what
 * it will not change again, and the host then continues its input hash from there instead of
 * comparing the whole conversation on every call (objects/controller/input-hash.ts). A harness that
 * does not seal loses nothing but that shortcut; one that seals and then changes a sealed entry
 * gets a wrong ModelCall.input_hash.
 */
export function sealMessages(messages: readonly Message[], length: number): void {
  if (length < 0 || length > messages.length || !Number.isInteger(length)) throw new RangeError(`cannot seal ${length} of ${messages.length} messages`);
  const before = sealed.get(messages) ?? 0;
  if (length < before) throw new RangeError(`${before} messages are already sealed: a seal only reaches further`);
  sealed.set(messages, length);
}

/** How many leading entries of `messages` are sealed (sealMessages); 0 when none are. */
export function sealedLength(messages: readonly Message[]): number {
  return sealed.get(messages) ?? 0;
}

const sealed = new WeakMap<readonly Message[], number>();

export interface ModelResponse {
  message: Message;
  usage?: Usage;
}

/** The harness's only channel to the host. Every method records before it returns. */
export interface EventSink {
  /** Host-mediated model call; the completion is journaled as OUTPUT (do not re-emit it via output). */
  model(req: ModelRequest): Promise<ModelResponse>;
  /** Journals an assistant text OUTPUT. */
  output(text: string): Promise<void>;
  /**
   * Host-executed tool call (CONTROLLER_MEDIATED or REQUIRES_APPROVAL): the intent is journaled,
   * then the host's executor runs it once per idempotency key and the receipt is journaled. A
   * REQUIRES_APPROVAL call parks the turn until a decision; the call then resolves on recovery.
   */
  toolCall(call: ToolCall, opts?: ToolCallOptions): Promise<ToolResult>;
  /** Reports a tool the harness ran itself (IN_HARNESS_REPORTED). */
  report(result: ToolResult): Promise<void>;
  usage(usage: Usage): Promise<void>;
  /**
   * Bounded history (docs/history.md): a host-mediated model call whose answer summarizes this
   * execution's whole history. It is journaled like `model` (MODEL_CALL, then OUTPUT), and with the
   * OUTPUT the host commits a compaction marker covering every record before this execution. From
   * the next execution on, the history handed over starts there: the summary, then only later
   * records. Refused (the turn fails) when the history is empty. Replay and recovery serve it from
   * the journal, like any model call. Absent on sinks of hosts that do not support it.
   */
  compact?(req: ModelRequest): Promise<ModelResponse>;
}
