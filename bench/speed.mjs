// The model's speed side by side, on one machine in one run: prefill and decode tokens/s of a
// GGUF (SmolLM2-135M-Instruct Q4_1 unless --model), greedy, the same prompt (bench/prompt.txt)
// and number of tokens,
// for sieve natively (CPU kernels, then WebGPU's native twin: wgpu on Vulkan), llama.cpp
// natively (node-llama-cpp), and sieve and wllama in headless Chromium (CPU in wasm, with and
// without cross-origin isolation; sieve on WebGPU, SwiftShader without a GPU).
//
//   node bench/speed.mjs --sieve BIN --pkg DIR [--model PATH] [--tokens 64] [--rounds 3]
//                        [--gpu-tokens 16 | --no-gpu] [--json OUT]
//
// --model is a path under the repository (the pages fetch it from the server there); --no-gpu
// leaves out the software-GPU rows, which a larger model makes take hours.
//
// scripts/bench-speed.sh builds what this needs and runs it. Prints a Markdown table; `--json`
// also writes every row with its details. The GPU rows decode fewer tokens (`--gpu-tokens`):
// a software GPU takes seconds per token.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";

const ROOT = new URL("..", import.meta.url).pathname;
const { values } = parseArgs({
  options: {
    sieve: { type: "string" },
    pkg: { type: "string" },
    tokens: { type: "string", default: "64" },
    rounds: { type: "string", default: "3" },
    "gpu-tokens": { type: "string", default: "16" },
    model: { type: "string", default: "assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" },
    "no-gpu": { type: "boolean", default: false },
    json: { type: "string" },
  },
});
const model = `${ROOT}${values.model}`;
const modelUrl = encodeURIComponent(`/${values.model}`);
const prompt = readFileSync(`${ROOT}bench/prompt.txt`, "utf8").trimEnd();
const cores = availableParallelism();
const threadCounts = [...new Set([1, cores])];
const rows = [];

/** Runs a command that prints one JSON object (and nothing else) on its standard output. */
function json(command, args) {
  console.error(`$ ${[command, ...args].map((a) => (a.length > 60 ? `${a.slice(0, 57)}...` : a)).join(" ")}`);
  const out = execFileSync(command, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 26 });
  return JSON.parse(out);
}

function add(where, engine, device, threads, r) {
  rows.push({ where, engine, device, threads: threads ?? "–", prompt_tokens: r.prompt_tokens, tokens: r.tokens, prefill_tokens_per_s: r.prefill_tokens_per_s, decode_tokens_per_s: r.decode_tokens_per_s, details: r });
}

function sieveNative(device, threads, tokens, rounds) {
  const r = json(values.sieve, ["bench-decode", "--model", model, "--raw", "--prompt", prompt, "--max-tokens", tokens, "--rounds", rounds, "--device", device, "--threads", String(threads)]);
  add("native", "sieve", r.device === "gpu" ? "gpu (wgpu)" : "cpu", r.threads, { ...r, tokens: r.unconstrained.completion_tokens });
}

for (const threads of threadCounts) {
  sieveNative("cpu", threads, values.tokens, values.rounds);
  const r = json("node", [`${ROOT}bench/llama_cpp.mjs`, "--model", model, "--prompt", prompt, "--tokens", values.tokens, "--threads", String(threads), "--rounds", values.rounds]);
  add("native", "llama.cpp", "cpu", threads, r);
}
if (!values["no-gpu"]) sieveNative("gpu", 0, values["gpu-tokens"], "1");

function page(query, isolated) {
  const args = [`${ROOT}tests/e2e/bench.mjs`, "--pkg", values.pkg, "--speed", "--query", query];
  const result = json("node", isolated ? args : [...args, "--no-isolation"]);
  for (const r of result.speed) add(`Chromium${isolated ? ", isolated" : ""}`, r.engine, r.device, r.threads, r);
}
const common = `tokens=${values.tokens}&rounds=${values.rounds}&model=${modelUrl}`;
page(`engines=sieve,wllama&device=cpu&threads=1&${common}`, false);
page(`engines=sieve,wllama&device=cpu&threads=${cores}&${common}`, true);
if (!values["no-gpu"]) page(`engines=sieve&device=webgpu&tokens=${values["gpu-tokens"]}&rounds=1&model=${modelUrl}`, true);

const fixed = (x) => (Number.isFinite(x) ? x.toFixed(1) : "–");
console.log(`${values.model.split("/").pop()}, ${rows[0].prompt_tokens}-token prompt, greedy, ${cores} cores\n`);
console.log("| where | engine | device | threads | prompt tokens | tokens | prefill tokens/s | decode tokens/s |");
console.log("|---|---|---|---:|---:|---:|---:|---:|");
for (const r of rows) {
  console.log(`| ${r.where} | ${r.engine} | ${r.device} | ${r.threads} | ${r.prompt_tokens} | ${r.tokens} | ${fixed(r.prefill_tokens_per_s)} | ${fixed(r.decode_tokens_per_s)} |`);
}
if (values.json) writeFileSync(values.json, JSON.stringify(rows, null, 2));
