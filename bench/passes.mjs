// The time of one forward pass of a few tokens on the CPU path in the page, in headless Chromium:
// what a short prompt or a piece of forced text (jump-forward) costs. For each model and each
// count of tokens, the median of five completions of one token after a prompt of that many
// tokens (" a" repeated), on one thread, as a Markdown table.
//
//   node bench/passes.mjs [--pkg DIR] [--tokens 1,2,4,8] [MODEL...]
//
// MODEL paths are under the repository (SmolLM2 Q4_1 by default). `--pkg` serves another build
// of the package (scripts/build-web.sh --release DIR) in place of web/pkg.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { start } from "../tests/e2e/browser.mjs";

const { values, positionals: models } = parseArgs({
  options: { pkg: { type: "string" }, tokens: { type: "string", default: "1,2,4,5,8,12" } },
  allowPositionals: true,
});
if (!models.length) models.push("assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
const counts = values.tokens.split(",").map(Number);

const page = await mkdtemp(join(tmpdir(), "sieve-passes-"));
await writeFile(join(page, "index.html"), `<!doctype html><script type="module">
import { createEngine } from "/web/pkg/index.js";
window.passes = async (model, counts) => {
  const engine = await createEngine({ model, device: "cpu", threads: 1, cache: false });
  const once = async (prompt) => {
    const start = performance.now();
    const r = await engine.completions.create({ prompt, max_tokens: 1, temperature: 0, jump_forward: false });
    return [performance.now() - start, r.usage.prompt_tokens];
  };
  await once("a a");
  const rows = [];
  for (const count of counts) {
    const runs = [];
    for (let round = 0; round < 5; round++) runs.push(await once(Array(count).fill("a").join(" ")));
    const ms = runs.map(([ms]) => ms).sort((a, b) => a - b);
    rows.push({ tokens: runs[0][1], ms: ms[2] });
  }
  engine.unload();
  return rows;
};
</script>`);
const mounts = { "/passes/": page, ...(values.pkg ? { "/web/pkg/": resolve(values.pkg) } : {}) };
const ctx = await start({ mounts });
try {
  await ctx.page.goto(`${ctx.url}passes/index.html`);
  console.log("| model | tokens | ms a pass |\n|---|---:|---:|");
  for (const model of models) {
    const rows = await ctx.page.evaluate(([m, c]) => window.passes(m, c), [`/${model}`, counts]);
    for (const r of rows) console.log(`| ${model.split("/").pop()} | ${r.tokens} | ${r.ms.toFixed(1)} |`);
  }
  if (ctx.errors.length) throw new Error(ctx.errors.join("; "));
} finally {
  await ctx.close();
}
