// Mastra's side of benchmarks/bench_signal_speed.py (issue 22), measured on the same machine in
// the same run as tui-agent's figures. Prints ONE JSON line on stdout; exits non-zero with a
// message on stderr if anything fails or takes longer than --timeout-s.
//
//   node benchmarks/mastra/bench.mjs [--burst 200] [--rounds 10] [--wakes 200]
//                                    [--storage file|memory] [--timeout-s 300]
//
// The model is in-process: Mastra's own MastraLanguageModelV2Mock (@mastra/core/test-utils/
// llm-mock) with a doStream that answers from memory, as tui-agent's ScriptedModel does.
// Storage is Mastra's documented minimal memory setup, @mastra/memory on a LibSQLStore, with
// the store on a file by default (tui-agent's side is a SQLite file store) or ':memory:' (the
// docs' quickstart) with --storage memory.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

import { Mastra } from "@mastra/core";
import { Agent } from "@mastra/core/agent";
import { MastraLanguageModelV2Mock } from "@mastra/core/test-utils/llm-mock";
import { LibSQLStore } from "@mastra/libsql";
import { Memory } from "@mastra/memory";

const R = "bench-user";

function parseArgs(argv) {
  const args = { burst: 200, rounds: 10, wakes: 200, storage: "file", "timeout-s": 300 };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "");
    if (!(name in args) || argv[i + 1] === undefined) throw new Error(`bad argument ${argv[i]}`);
    args[name] = name === "storage" ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (!["file", "memory"].includes(args.storage)) throw new Error("--storage is file or memory");
  return args;
}

/** A promise that rejects after `ms` naming `what`: every wait in this script is bounded. */
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The stream parts of one answer, as Mastra's createMockModel (v2) makes them. */
function answerParts(text) {
  return [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "id-0", modelId: "mock-model-id", timestamp: new Date(0) },
    { type: "text-start", id: "text-1" },
    { type: "text-delta", id: "text-1", delta: text },
    { type: "text-end", id: "text-1" },
    { type: "finish", finishReason: "stop",
      usage: { inputTokens: 10, outputTokens: 20, totalTokens: 30 } },
  ];
}

/** A mock model whose first call is held open (its stream started, no text) until release(),
 * like the Python side's HeldRun; every other call answers at once. */
function heldModel() {
  let calls = 0;
  let entered;
  let release;
  const enteredP = new Promise((resolve) => { entered = resolve; });
  const gate = new Promise((resolve) => { release = resolve; });
  const model = new MastraLanguageModelV2Mock({
    doStream: async () => {
      calls += 1;
      const first = calls === 1;
      const stream = new ReadableStream({
        async start(controller) {
          const parts = answerParts("ok");
          if (first) {
            controller.enqueue(parts[0]);
            entered();
            await gate;
            parts.shift();
          }
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      });
      return { stream, rawCall: { rawPrompt: null, rawSettings: {} }, warnings: [] };
    },
  });
  return { model, entered: enteredP, release, calls: () => calls };
}

function answeringModel(text) {
  return new MastraLanguageModelV2Mock({
    doStream: async () => ({
      stream: new ReadableStream({
        start(controller) {
          for (const part of answerParts(text)) controller.enqueue(part);
          controller.close();
        },
      }),
      rawCall: { rawPrompt: null, rawSettings: {} },
      warnings: [],
    }),
  });
}

function makeStorage(args, dir, name) {
  const url = args.storage === "file" ? `file:${join(dir, `${name}.db`)}` : ":memory:";
  return new LibSQLStore({ id: `bench-${name}`, url });
}

/** An agent registered on a Mastra instance with the docs' minimal memory setup. */
function makeAgent(args, dir, name, model) {
  const agent = new Agent({
    id: name, name, instructions: "x", model,
    memory: new Memory({ options: { lastMessages: 20 } }),
  });
  const mastra = new Mastra({ agents: { [name]: agent }, storage: makeStorage(args, dir, name),
    logger: false });
  return mastra.getAgent(name);
}

/** The burst's signals, made before the clock starts (mirrors _inputs in bench_signal_speed). */
function inputs(kind, r, count) {
  return Array.from({ length: count }, (_, i) => (kind === "user"
    ? { type: "user", contents: `r${r}-m${i}` }
    : { type: "reactive", tagName: "build", contents: `r${r}-m${i}`, attributes: { n: i } }));
}

/** Median accepted/s of `rounds` bursts of `count` sendSignal calls into a run held open. */
async function burst(args, dir, kind) {
  const held = heldModel();
  const agent = makeAgent(args, dir, `burst-${kind}`, held.model);
  const where = { resourceId: R, threadId: `burst-${kind}` };
  const woken = await within(agent.sendMessage("start", where).accepted, 30_000, "the wake");
  if (woken.action !== "wake") throw new Error(`the first send was not a wake: ${woken.action}`);
  await within(held.entered, 30_000, "the held model call");
  const rates = [];
  for (let r = 0; r < args.rounds; r += 1) {
    const signals = inputs(kind, r, args.burst);
    const start = performance.now();
    const results = await within(
      Promise.all(signals.map((s) => agent.sendSignal(s, where).accepted)), 30_000, "a burst");
    rates.push(args.burst / ((performance.now() - start) / 1000));
    const wrong = results.filter((x) => x.action !== "deliver" || x.runId !== woken.runId);
    if (wrong.length) throw new Error(`${kind}: ${wrong.length} not delivered into the run`);
  }
  held.release();
  await within(woken.output.getFullOutput(), 60_000, "the held run's end");
  return { rate: median(rates), rates, modelCalls: held.calls() };
}

/** Median ms from sendMessage to an idle thread to its first text delta (a new thread each
 * wake; the first ten warm up), as wake_ms in bench_signal_speed. */
async function wake(args, dir) {
  const agent = makeAgent(args, dir, "wake", answeringModel("hello there"));
  const samples = [];
  for (let i = 0; i < args.wakes + 10; i += 1) {
    const where = { resourceId: R, threadId: `idle-${i}` };
    const start = performance.now();
    const decision = await within(agent.sendMessage("hi", where).accepted, 30_000, "a wake");
    if (decision.action !== "wake") throw new Error(`wake ${i} was ${decision.action}`);
    await within(firstDelta(decision.output, () => samples.push(performance.now() - start)),
      30_000, "a wake's first delta");
    await within(decision.output.getFullOutput(), 30_000, "a wake's end");
  }
  return { ms: median(samples.slice(10)), wakes: args.wakes };
}

async function firstDelta(output, seen) {
  for await (const chunk of output.fullStream) {
    if (chunk.type === "text-delta") {
      seen();
      return;
    }
  }
  throw new Error("the stream ended without a text delta");
}

function version(name) {
  const require = createRequire(import.meta.url);
  const path = require.resolve(`${name}/package.json`, { paths: [import.meta.dirname] });
  return JSON.parse(readFileSync(path, "utf8")).version;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), "bench-mastra-"));
  try {
    const user = await burst(args, dir, "user");
    const typed = await burst(args, dir, "typed");
    const idle = await wake(args, dir);
    console.log(JSON.stringify({
      burst_user: user.rate, burst_typed: typed.rate, wake_ms: idle.ms,
      burst_user_rounds: user.rates, burst_typed_rounds: typed.rates,
      setup: {
        node: process.version,
        versions: Object.fromEntries(
          ["@mastra/core", "@mastra/memory", "@mastra/libsql"].map((n) => [n, version(n)])),
        storage: args.storage === "file" ? "LibSQLStore file" : "LibSQLStore :memory:",
        memory: "Memory({ options: { lastMessages: 20 } })",
        model: "MastraLanguageModelV2Mock, in-process",
        burst: args.burst, rounds: args.rounds, wakes: args.wakes,
        held_run_model_calls: { user: user.modelCalls, typed: typed.modelCalls },
      },
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const deadline = setTimeout(() => {
  console.error("bench.mjs: timed out");
  process.exit(3);
}, 1000 * (Number(process.argv[process.argv.indexOf("--timeout-s") + 1]) || 300));

main().then(
  () => {
    clearTimeout(deadline);
    process.exit(0);
  },
  (error) => {
    console.error(`bench.mjs: ${error?.stack ?? error}`);
    process.exit(1);
  },
);
