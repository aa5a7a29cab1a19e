// The CPU path's other threads in a cross-origin isolated page. A Web Worker shares no wasm
// memory with the engine's worker, so each helper (helper.js) runs its own instance of the
// module holding one part of every product's rows (a `Shard`, loaded from the file's bytes as
// they arrive, the only rows it keeps); the engine's worker computes
// part 0 and, for each product of a pass, hands the activations to the helpers and collects
// their rows through SharedArrayBuffers, waking and waiting with Atomics. Rust's side of it is
// `crate::parts` (`HelperPool` is the type it imports).

/** Slots of the control array shared with the helpers. */
export const CONTROL = {
  /** Bumped by the engine's worker for each product; helpers wait for it to change. */
  round: 0,
  /** The product (layer * 4 + Q/K/V, output, gate/up, down; the head last) and its tokens. */
  stack: 1,
  tokens: 2,
  /** Values of the input in this round. */
  length: 3,
  /** Helpers done with this round. */
  done: 4,
  /** Set when a helper failed this round (its error goes to the console). */
  failed: 5,
  /** Set to stop the helpers. */
  stop: 6,
  size: 7,
};

/** How long the engine's worker waits for its helpers before it fails the pass. */
const TIMEOUT_MS = 30_000;

/** Whether this context can block on Atomics.wait with helper workers: a cross-origin isolated
 * worker (the main thread may not block). */
export function canUseHelpers() {
  return (
    globalThis.crossOriginIsolated === true &&
    typeof SharedArrayBuffer !== "undefined" &&
    typeof WorkerGlobalScope !== "undefined" &&
    globalThis instanceof WorkerGlobalScope
  );
}

/** Helper workers holding parts 1..parts of a model's products. */
export class HelperPool {
  #workers;
  #control = null;
  #input = null;
  #output = null;
  #maxTokens = 0;
  #weightBytes = 0;
  #memoryBytes = 0;

  constructor(workers) {
    this.#workers = workers;
  }

  /**
   * Starts `parts - 1` helpers on `module` (the compiled sieve module), each to load its part
   * of the model from the file's bytes handed to `push`, in order; `ready` then waits for them.
   */
  static async start({ module, parts }) {
    const workers = [];
    try {
      for (let part = 1; part < parts; part++) {
        const worker = new Worker(new URL("./helper.js", import.meta.url), { type: "module" });
        workers.push(worker);
      }
      await Promise.all(workers.map((worker, i) => ask(worker, { op: "start", module, part: i + 1, parts })));
      return new HelperPool(workers);
    } catch (err) {
      for (const worker of workers) worker.terminate();
      throw err;
    }
  }

  /** Hands the file's next bytes to every helper; resolves once each has read them. */
  push(chunk) {
    // A message copies a view's whole buffer: a piece of a larger one goes as a copy of its own.
    const own = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength ? chunk : chunk.slice();
    return Promise.all(this.#workers.map((worker) => ask(worker, { op: "push", chunk: own })));
  }

  /**
   * Waits for every helper to hold its part of the whole file, then sets them waiting for work
   * on products of `maxTokens` tokens at most.
   */
  async ready(maxTokens = 64) {
    const loaded = await Promise.all(this.#workers.map((worker) => ask(worker, { op: "finish", maxTokens })));
    const [input, output] = loaded.reduce(([i, o], { lengths: [a, b] }) => [Math.max(i, a), Math.max(o, b)], [0, 0]);
    const buffers = {
      control: new SharedArrayBuffer(CONTROL.size * 4),
      input: new SharedArrayBuffer(input * 4),
      output: new SharedArrayBuffer(output * 4),
    };
    await Promise.all(this.#workers.map((worker) => ask(worker, { op: "run", ...buffers })));
    this.#control = new Int32Array(buffers.control);
    this.#input = new Float32Array(buffers.input);
    this.#output = new Float32Array(buffers.output);
    this.#maxTokens = maxTokens;
    this.#weightBytes = loaded.reduce((sum, { weightBytes }) => sum + weightBytes, 0);
    this.#memoryBytes = loaded.reduce((sum, { memoryBytes }) => sum + memoryBytes, 0);
    return this;
  }

  /** Bytes of the weights the helpers hold, once ready. */
  get weightBytes() {
    return this.#weightBytes;
  }

  /** Bytes of the helpers' wasm memories, once ready (a high-water mark: it never shrinks). */
  get memoryBytes() {
    return this.#memoryBytes;
  }

  get parts() {
    return this.#workers.length + 1;
  }

  get maxTokens() {
    return this.#maxTokens;
  }

  /** Starts the helpers on product `stack` of `x` (`n` tokens). */
  start(stack, n, x) {
    const c = this.#control;
    this.#input.set(x);
    c[CONTROL.stack] = stack;
    c[CONTROL.tokens] = n;
    c[CONTROL.length] = x.length;
    Atomics.store(c, CONTROL.done, 0);
    Atomics.add(c, CONTROL.round, 1);
    Atomics.notify(c, CONTROL.round);
  }

  /** Waits for the helpers of the last `start`; their rows (`[row, token]`), `length` values. */
  finish(length) {
    const c = this.#control;
    const helpers = this.#workers.length;
    const deadline = performance.now() + TIMEOUT_MS;
    let done = Atomics.load(c, CONTROL.done);
    for (let spins = 0; done < helpers; done = Atomics.load(c, CONTROL.done)) {
      // Spin a little (a product takes microseconds to a few milliseconds), then sleep.
      if (++spins < 2000) continue;
      if (Atomics.wait(c, CONTROL.done, done, 50) === "timed-out" && performance.now() > deadline) {
        throw new Error(`sieve: the CPU helper workers did not answer within ${TIMEOUT_MS / 1000} s`);
      }
    }
    if (Atomics.load(c, CONTROL.failed)) throw new Error("sieve: a CPU helper worker failed (see the console)");
    return this.#output.subarray(0, length);
  }

  /** Stops the helpers. */
  close() {
    if (this.#control) {
      Atomics.store(this.#control, CONTROL.stop, 1);
      Atomics.add(this.#control, CONTROL.round, 1);
      Atomics.notify(this.#control, CONTROL.round);
    }
    for (const worker of this.#workers) worker.terminate();
  }
}

/** Posts `message` to a helper; resolves with its answer's `result`, rejects with its error. */
function ask(worker, message) {
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => (data.error ? reject(new Error(data.error)) : resolve(data.result));
    worker.onerror = (event) => reject(new Error(`sieve: a CPU helper worker failed to start: ${event.message ?? "error"}`));
    worker.postMessage(message);
  });
}
