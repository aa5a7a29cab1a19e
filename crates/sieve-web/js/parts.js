// The CPU path's other threads in a cross-origin isolated page. A Web Worker shares no wasm
// memory with the engine's worker, so each helper (helper.js) runs its own instance of the
// module holding one part of every product's rows (a `Shard`); the engine's worker computes
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
  #control;
  #input;
  #output;
  #maxTokens;

  constructor(workers, buffers, maxTokens) {
    this.#workers = workers;
    this.#control = new Int32Array(buffers.control);
    this.#input = new Float32Array(buffers.input);
    this.#output = new Float32Array(buffers.output);
    this.#maxTokens = maxTokens;
  }

  /**
   * Starts `parts - 1` helpers on `module` (the compiled sieve module) and the model's GGUF
   * `bytes`; resolves when each holds its part and waits for work.
   */
  static async start({ module, bytes, parts, maxTokens = 64 }) {
    const shared = new SharedArrayBuffer(bytes.byteLength);
    new Uint8Array(shared).set(bytes);
    const workers = [];
    try {
      const lengths = [];
      for (let part = 1; part < parts; part++) {
        const worker = new Worker(new URL("./helper.js", import.meta.url), { type: "module" });
        workers.push(worker);
        lengths.push(ask(worker, { op: "load", module, bytes: shared, part, parts, maxTokens }));
      }
      const [input, output] = (await Promise.all(lengths)).reduce(([i, o], [a, b]) => [Math.max(i, a), Math.max(o, b)], [0, 0]);
      const buffers = {
        control: new SharedArrayBuffer(CONTROL.size * 4),
        input: new SharedArrayBuffer(input * 4),
        output: new SharedArrayBuffer(output * 4),
      };
      await Promise.all(workers.map((worker) => ask(worker, { op: "run", ...buffers })));
      return new HelperPool(workers, buffers, maxTokens);
    } catch (err) {
      for (const worker of workers) worker.terminate();
      throw err;
    }
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
    Atomics.store(this.#control, CONTROL.stop, 1);
    Atomics.add(this.#control, CONTROL.round, 1);
    Atomics.notify(this.#control, CONTROL.round);
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
