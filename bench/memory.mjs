// The WebAssembly memory sieve's engine takes in the page, in headless Chromium: for each model,
// on WebGPU (SwiftShader without a GPU) and on the CPU on one thread and on two (the page is
// cross-origin isolated, so the second is a helper worker). It prints `engine.info`'s
// `memoryBytes` after the load (the modules' memory, which never shrinks: the most the load
// needed), the weights' bytes, and the load's seconds, as a Markdown table.
//
//   node bench/memory.mjs [MODEL...]     (paths under the repository; SmolLM2 Q4_1 by default)
//
// It serves web/pkg, the package scripts/build-web.sh builds.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { start } from "../tests/e2e/browser.mjs";

const models = process.argv.slice(2);
if (!models.length) models.push("assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");

const page = await mkdtemp(join(tmpdir(), "sieve-memory-"));
await writeFile(join(page, "index.html"), `<!doctype html><script type="module">
import { createEngine } from "/web/pkg/index.js";
window.load = async (model, device, threads) => {
  const start = performance.now();
  const engine = await createEngine({ model, device, threads, cache: false });
  const seconds = (performance.now() - start) / 1000;
  const info = engine.info;
  engine.unload();
  return { seconds, memoryBytes: info.memoryBytes, weightBytes: info.weightBytes, threads: info.threads };
};
</script>`);
const ctx = await start({ mounts: { "/memory/": page } });
try {
  await ctx.page.goto(`${ctx.url}memory/index.html`);
  const mb = (bytes) => (bytes / 1e6).toFixed(0);
  console.log("| model | device | threads | WebAssembly memory, MB | weights, MB | load, s |\n|---|---|---:|---:|---:|---:|");
  for (const model of models) {
    for (const [device, threads] of [["webgpu", null], ["cpu", 1], ["cpu", 2]]) {
      const r = await ctx.page.evaluate(([m, d, t]) => window.load(m, d, t), [`/${model}`, device, threads]);
      console.log(`| ${model.split("/").pop()} | ${device} | ${r.threads ?? "–"} | ${mb(r.memoryBytes)} | ${mb(r.weightBytes)} | ${r.seconds.toFixed(1)} |`);
    }
  }
  if (ctx.errors.length) throw new Error(ctx.errors.join("; "));
} finally {
  await ctx.close();
}
