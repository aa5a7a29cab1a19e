// A helper worker of the CPU path (see parts.js): loads one part of every product's rows of
// the model as the file's bytes arrive, then computes them whenever the engine's worker bumps
// the round.
// Messages in: {op: "start", module, part, parts}, {op: "push", chunk} for each piece of the
// file in order, {op: "finish", maxTokens}, then {op: "run", control, input, output}, after
// which it blocks on the control array until told to stop.
import { initSync, ShardLoader } from "./sieve_web.js";
import { CONTROL } from "./parts.js";

let wasm = null;
let loader = null;
let shard = null;

function start({ module, part, parts }) {
  wasm = initSync({ module });
  loader = ShardLoader.start(part, parts);
}

/** The shard's buffer lengths for products of `maxTokens` tokens, its weights' bytes and this
 * instance's memory. */
function finish({ maxTokens }) {
  shard = loader.finish();
  loader = null;
  return { lengths: Array.from(shard.bufferLengths(maxTokens)), weightBytes: shard.weightBytes, memoryBytes: wasm.memory.buffer.byteLength };
}

/** Computes this part's rows of each round's product until the stop flag is set. */
function run({ control, input, output }) {
  const c = new Int32Array(control);
  const x = new Float32Array(input);
  const out = new Float32Array(output);
  const rows = new Map();
  let seen = Atomics.load(c, CONTROL.round);
  for (;;) {
    // Spin a little (the next product follows within microseconds in a pass), then sleep.
    for (let spins = 0; Atomics.load(c, CONTROL.round) === seen && spins < 20000; spins++);
    Atomics.wait(c, CONTROL.round, seen);
    seen = Atomics.load(c, CONTROL.round);
    if (Atomics.load(c, CONTROL.stop)) return;
    const [stack, n, length] = [c[CONTROL.stack], c[CONTROL.tokens], c[CONTROL.length]];
    try {
      if (!rows.has(stack)) rows.set(stack, shard.rows(stack)[0]);
      out.set(shard.product(stack, n, x.subarray(0, length)), rows.get(stack) * n);
    } catch (err) {
      console.error("sieve: CPU helper:", err);
      Atomics.store(c, CONTROL.failed, 1);
    }
    Atomics.add(c, CONTROL.done, 1);
    Atomics.notify(c, CONTROL.done);
  }
}

self.onmessage = ({ data }) => {
  try {
    if (data.op === "start") {
      postMessage({ result: start(data) ?? true });
    } else if (data.op === "push") {
      loader.push(data.chunk);
      postMessage({ result: true });
    } else if (data.op === "finish") {
      postMessage({ result: finish(data) });
    } else if (data.op === "run") {
      // Answers first: the loop below blocks this worker for good.
      postMessage({ result: true });
      run(data);
    }
  } catch (err) {
    postMessage({ error: String(err?.message ?? err) });
  }
};
