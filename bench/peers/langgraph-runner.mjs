/**
 * The LangGraph peer of `npm run bench:peers`, run as a child process of bench/peers/run.ts (over
 * Node IPC) so that its turns are timed in process and its fsyncs can be counted on its own pid.
 *
 * A chat turn is one `invoke` of a one-node graph (MessagesAnnotation): the user's message goes in,
 * a stub model node answers `echo:<text>` at once, and the SQLite checkpointer (better-sqlite3,
 * WAL, synchronous=FULL, durability "sync") has persisted every checkpoint before `invoke` returns.
 * Each store is its own database file, so the long session's storage can be read on its own.
 *
 * The runner also reads the logical size of SQLite files for the other peers (`sizes`): it is the
 * one process of the bench that has a SQLite library.
 *
 * Plain JavaScript on purpose: the project's typecheck must pass without the peers installed.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";

const dir = process.argv[2];
const stores = new Map();

function store(name) {
  let s = stores.get(name);
  if (s) return s;
  const db = new Database(join(dir, `${name}.sqlite`));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  const checkpointer = new SqliteSaver(db);
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("model", (state) => {
      const last = state.messages[state.messages.length - 1];
      return { messages: [new AIMessage(`echo:${last.content}`)] };
    })
    .addEdge(START, "model")
    .addEdge("model", END)
    .compile({ checkpointer });
  s = { db, graph, file: join(dir, `${name}.sqlite`) };
  stores.set(name, s);
  return s;
}

async function turn({ store: name, thread, text }) {
  const { graph } = store(name);
  const t = performance.now();
  await graph.invoke({ messages: [new HumanMessage(text)] }, { configurable: { thread_id: thread }, durability: "sync" });
  return performance.now() - t;
}

/** Appends `turns` user/answer pairs to a thread in one checkpoint: a long session built in bulk. */
async function seed({ store: name, thread, turns, from }) {
  const { graph } = store(name);
  const messages = [];
  for (let i = 0; i < turns; i++) messages.push(new HumanMessage(`seed ${from + i}`), new AIMessage(`echo:seed ${from + i}`));
  await graph.updateState({ configurable: { thread_id: thread } }, { messages }, "model");
  return 0;
}

/** Logical bytes ((pages - free pages) x page size) of each SQLite file, read from a copy with its WAL. */
function sizes({ files }) {
  const scratch = mkdtempSync(join(dir, "sizes-"));
  try {
    return files.map((f, i) => {
      if (!existsSync(f)) return 0;
      const copy = join(scratch, `${i}.sqlite`);
      copyFileSync(f, copy);
      if (existsSync(`${f}-wal`)) copyFileSync(`${f}-wal`, `${copy}-wal`);
      const db = new Database(copy);
      try {
        const pages = db.pragma("page_count", { simple: true }) - db.pragma("freelist_count", { simple: true });
        return pages * db.pragma("page_size", { simple: true });
      } finally {
        db.close();
      }
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const ops = {
  turn,
  seed,
  sizes,
  file: ({ store: name }) => store(name).file,
};

/** Replies to the bench; a bench that is gone (stopped, or interrupted) ends the runner. */
function reply(msg) {
  if (!process.connected) return process.exit(0);
  process.send(msg, (err) => {
    if (err) process.exit(0);
  });
}

process.on("message", async (msg) => {
  try {
    reply({ id: msg.id, ok: true, result: await ops[msg.op](msg) });
  } catch (e) {
    reply({ id: msg.id, ok: false, error: String(e?.stack ?? e) });
  }
});
process.on("disconnect", () => {
  for (const s of stores.values()) s.db.close();
  process.exit(0);
});
reply({ ready: true });
