// llama.cpp's CPU speed on a GGUF, through node-llama-cpp (its prebuilt binary from npm), for the
// side-by-side table of bench/decode.sh: greedy decoding of a prompt, timed as prefill (the
// prompt's evaluation, up to the first token) and decode (every token after the first).
//
//   node bench/llama_cpp.mjs --model FILE --prompt TEXT [--tokens 64] [--threads 2] [--rounds 3]
//
// Prints one JSON line: medians over the rounds of prefill and decode tokens per second.
// node-llama-cpp is installed by bench/decode.sh into bench/node_modules (npm i -E).
import { parseArgs } from "node:util";
import { getLlama } from "node-llama-cpp";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    prompt: { type: "string" },
    tokens: { type: "string", default: "64" },
    threads: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
  },
});
const [tokens, threads, rounds] = [values.tokens, values.threads, values.rounds].map(Number);

const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads, logLevel: "error" });
const model = await llama.loadModel({ modelPath: values.model, gpuLayers: 0 });
const prompt = model.tokenize(values.prompt, true);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const prefill = [];
const decode = [];
let text = "";
for (let round = 0; round <= rounds; round++) {
  const context = await model.createContext({ contextSize: 512, threads: { ideal: threads, min: threads }, batchSize: 512 });
  const sequence = context.getSequence();
  const start = performance.now();
  let first = null;
  const out = [];
  for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
    if (first === null) first = performance.now();
    out.push(token);
    if (out.length >= tokens) break;
  }
  const end = performance.now();
  await context.dispose();
  // The first round warms the caches up and is not counted.
  if (round === 0) continue;
  prefill.push((prompt.length * 1000) / (first - start));
  decode.push(((out.length - 1) * 1000) / (end - first));
  text = model.detokenize(out);
}
console.log(
  JSON.stringify({
    engine: "llama.cpp",
    version: llama.llamaCppRelease?.release ?? null,
    threads,
    prompt_tokens: prompt.length,
    tokens,
    prefill_tokens_per_s: median(prefill),
    decode_tokens_per_s: median(decode),
    text,
  }),
);
await model.dispose();
await llama.dispose();
