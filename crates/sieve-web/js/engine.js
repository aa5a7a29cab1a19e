// The OpenAI-shaped engine: `createEngine` loads the model (in a Web Worker by default) and
// returns an object with `chat.completions.create` and `completions.create`. Requests run one
// at a time, in the order they were made.
import { Backend } from "./backend.js";
import { SieveError } from "./errors.js";

/** Runs the backend in a Web Worker; every call is a message with an id. */
class WorkerChannel {
  #worker;
  #next = 1;
  #pending = new Map();
  #dead = null;

  constructor() {
    this.#worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    this.#worker.onmessage = ({ data }) => this.#receive(data);
    this.#worker.onerror = (event) => {
      event.preventDefault?.();
      this.#die(new Error(`the sieve worker failed: ${event.message ?? "unknown error"}`));
    };
  }

  #receive({ id, type, ...rest }) {
    const call = this.#pending.get(id);
    if (!call) return;
    if (type === "progress") call.onProgress?.(rest.progress);
    else if (type === "delta") call.onDelta?.(rest.text, rest.forced, rest.toolCall);
    else {
      this.#pending.delete(id);
      if (type === "done") call.resolve(rest.result);
      else call.reject(Object.assign(rest.sieve ? new SieveError(rest.message, rest.sieve) : new Error(rest.message), { fatal: rest.fatal }));
    }
  }

  #die(err) {
    this.#dead = err;
    for (const call of this.#pending.values()) call.reject(Object.assign(err, { fatal: true }));
    this.#pending.clear();
  }

  #call(message, handlers = {}, transfer = []) {
    const id = this.#next++;
    if (this.#dead) return { id, done: Promise.reject(this.#dead) };
    return {
      id,
      done: new Promise((resolve, reject) => {
        this.#pending.set(id, { ...handlers, resolve, reject });
        this.#worker.postMessage({ ...message, id }, transfer);
      }),
    };
  }

  load(source, { cache, device, threads, context, onProgress }) {
    const transfer = source instanceof ArrayBuffer ? [source] : [];
    return this.#call({ op: "load", source, cache, device, threads, context }, { onProgress }, transfer).done;
  }

  generate(request, onDelta, isAborted) {
    const call = this.#call({ op: "generate", request }, { onDelta });
    const poll = setInterval(() => {
      if (isAborted()) {
        this.#worker.postMessage({ op: "abort", id: call.id });
        clearInterval(poll);
      }
    }, 20);
    return call.done.finally(() => clearInterval(poll));
  }

  close() {
    this.#worker.terminate();
    this.#die(new Error("the engine was unloaded"));
  }
}

/** Runs the backend on the calling thread. */
class LocalChannel {
  #backend = new Backend();
  load(source, options) {
    return this.#backend.load(source, options);
  }
  generate(request, onDelta, isAborted) {
    return this.#backend.generate(request, onDelta, isAborted);
  }
  close() {}
}

function abortError(signal) {
  return signal?.reason instanceof Error ? signal.reason : new DOMException("The request was aborted.", "AbortError");
}

/** An async iterator fed by a producer: `push(value)`, `end()`, `fail(err)`. */
function channelIterator() {
  const queue = [];
  let wake = null;
  let finished = false;
  let failure = null;
  const notify = () => wake?.();
  return {
    push(value) {
      queue.push(value);
      notify();
    },
    end() {
      finished = true;
      notify();
    },
    fail(err) {
      failure = err;
      notify();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (queue.length) yield queue.shift();
        else if (failure) throw failure;
        else if (finished) return;
        else await new Promise((resolve) => (wake = resolve));
      }
    },
  };
}

let completionCounter = 0;

const DEVICES = ["auto", "webgpu", "cpu"];

/** Loads a model and returns the engine. See index.d.ts for the options. */
export async function createEngine({ model, device = "auto", threads = null, context = 4096, onProgress = () => {}, worker = true, cache = true } = {}) {
  if (model === undefined) throw new TypeError("createEngine: `model` (a URL or the GGUF bytes) is required");
  if (!DEVICES.includes(device)) throw new TypeError(`createEngine: \`device\` is one of ${DEVICES.join(", ")}, not ${JSON.stringify(device)}`);
  if (threads !== null && !(Number.isInteger(threads) && threads >= 1)) throw new TypeError(`createEngine: \`threads\` is a whole number from 1, not ${JSON.stringify(threads)}`);
  if (!(Number.isInteger(context) && context >= 1 && context <= 65535)) throw new TypeError(`createEngine: \`context\` is a whole number of tokens from 1 to 65535, not ${JSON.stringify(context)}`);
  if (worker && typeof Worker === "undefined") throw new Error("createEngine: Web Workers are not available; pass worker: false");
  let source = model instanceof URL ? String(model) : model;
  if (ArrayBuffer.isView(source)) source = source.buffer.slice(source.byteOffset, source.byteOffset + source.byteLength);
  const open = async () => {
    const channel = worker ? new WorkerChannel() : new LocalChannel();
    const copy = source instanceof ArrayBuffer ? source.slice(0) : source;
    const info = await channel.load(copy, { cache, device, threads, context, onProgress });
    return { channel, info };
  };
  let current = await open();
  let queue = Promise.resolve();
  const modelName = typeof model === "string" ? model.split("/").pop() : "sieve-model";

  // Runs one request after those before it; a fatal failure (the wasm module died) reloads the
  // model before the next request.
  function enqueue(request, onDelta, signal) {
    const run = async () => {
      if (signal?.aborted) throw abortError(signal);
      if (!current) current = await open();
      try {
        const result = await current.channel.generate(request, onDelta, () => Boolean(signal?.aborted));
        if (result.finish_reason === "abort") throw abortError(signal);
        return result;
      } catch (err) {
        if (err?.fatal) {
          current.channel.close();
          current = null;
        }
        throw err;
      }
    };
    const result = queue.then(run, run);
    queue = result.catch(() => {});
    return result;
  }

  function create(kind, { messages, prompt, stream = false, signal, ...options } = {}) {
    const request = { ...options, ...(kind === "chat" ? { messages } : { prompt }) };
    const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-sieve-${++completionCounter}`;
    const created = Math.floor(Date.now() / 1000);
    const object = kind === "chat" ? "chat.completion" : "text_completion";
    const choice = (r) =>
      kind === "chat"
        ? { index: 0, message: { role: "assistant", content: r.content, ...(r.tool_calls ? { tool_calls: r.tool_calls } : {}) }, finish_reason: r.finish_reason }
        : { index: 0, text: r.text, finish_reason: r.finish_reason };
    const usage = (r) => ({ ...r.usage, timings: r.timings, ...(r.warnings.length ? { warnings: r.warnings } : {}) });
    if (!stream) {
      return enqueue(request, () => {}, signal).then((r) => ({
        id,
        object,
        created,
        model: modelName,
        choices: [choice(r)],
        usage: usage(r),
      }));
    }
    const chunks = channelIterator();
    const chunk = (delta, finish_reason, extra = {}) => ({
      id,
      object: kind === "chat" ? "chat.completion.chunk" : "text_completion",
      created,
      model: modelName,
      choices: [kind === "chat" ? { index: 0, delta, finish_reason } : { index: 0, text: delta.content ?? "", finish_reason }],
      ...extra,
    });
    let first = true;
    enqueue(
      request,
      (text, forced, toolCall) => {
        const part = toolCall ? { tool_calls: [toolCall] } : { content: text };
        const delta = first && kind === "chat" ? { role: "assistant", ...part } : part;
        first = false;
        chunks.push(chunk(delta, null, { sieve: { forced } }));
      },
      signal,
    ).then(
      (r) => {
        chunks.push(chunk({}, r.finish_reason, { usage: usage(r) }));
        chunks.end();
      },
      (err) => chunks.fail(err),
    );
    return Promise.resolve(chunks);
  }

  return {
    /** The loaded model and where it runs: see `EngineInfo` in index.d.ts. */
    get info() {
      return current?.info ?? null;
    },
    chat: { completions: { create: (body) => create("chat", body) } },
    completions: { create: (body) => create("text", body) },
    /** Stops the worker and frees the model. */
    unload() {
      current?.channel.close();
      current = null;
    },
  };
}
