// The packed npm tarball in a bundler project: install it into a small Vite app that imports
// "sieve-web" by name, `vite build` it, serve the built files and run them in Chromium. The
// low-level API's masks must equal a brute-force check over the whole Llama-3 vocabulary, and
// the engine's Web Worker, which the bundle emits as a file of its own, must start and run the
// wasm module (WebGPU set up, the model bytes parsed) inside the worker. The same app also runs
// on Vite's dev server with the one setting the package's README asks for.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build, createServer } from "vite";
import { start } from "./browser.mjs";
import { installTarball } from "./pack.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const APP = new URL("./out/vite-app/", import.meta.url);

const HTML = `<!doctype html>
<meta charset="utf-8">
<title>sieve-web in a Vite app</title>
<script type="module" src="./main.js"></script>`;

// The app's code: what a user of the package writes, importing the package by its name.
const MAIN = `import { init, createEngine, Vocabulary, Constraint, Matcher } from "sieve-web";

// Walks the constraint {"ok": boolean} (compact) with random allowed tokens; at every step the
// mask must allow exactly the tokens whose bytes extend the text towards {"ok":true} or
// {"ok":false}, plus end of sequence once the text is one of them.
window.lowLevel = async (tokenizerUrl, seed) => {
  await init();
  const vocab = Vocabulary.fromTokenizerJson(await (await fetch(tokenizerUrl)).text());
  const constraint = Constraint.jsonSchema(
    { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false },
    { whitespace: "compact" },
  );
  const matcher = new Matcher(constraint, vocab);
  const enc = new TextEncoder();
  const targets = ['{"ok":true}', '{"ok":false}'].map((t) => enc.encode(t));
  const tokens = Array.from({ length: vocab.size }, (_, id) => vocab.tokenBytes(id));
  const eos = new Set(vocab.eosTokens);
  let text = new Uint8Array(0);
  const extends_ = (bytes) =>
    targets.some((t) => text.length + bytes.length <= t.length && t.subarray(0, text.length).every((b, i) => b === text[i]) && bytes.every((b, i) => b === t[text.length + i]));
  const complete = () => targets.some((t) => t.length === text.length && t.every((b, i) => b === text[i]));
  const mask = new Uint32Array(vocab.maskWords);
  const steps = [];
  let rng = seed;
  for (let step = 0; step < 20 && !matcher.isTerminated(); step++) {
    mask.fill(0);
    matcher.fillNextTokenBitmask(mask);
    const allowed = [];
    const wrong = [];
    for (let id = 0; id < mask.length * 32; id++) {
      const bit = (mask[id >>> 5] >>> (id & 31)) & 1;
      const want = id < vocab.size && (eos.has(id) ? complete() : tokens[id].length > 0 && extends_(tokens[id]));
      if (bit) allowed.push(id);
      if (Boolean(bit) !== want) wrong.push(id);
    }
    steps.push({ text: new TextDecoder().decode(text), allowed: allowed.length, wrong: wrong.slice(0, 10) });
    if (!allowed.length) break;
    rng = (rng * 1103515245 + 12345) >>> 0;
    const id = allowed[rng % allowed.length];
    matcher.acceptToken(id);
    if (!eos.has(id)) text = new Uint8Array([...text, ...tokens[id]]);
  }
  return { size: vocab.size, steps, text: new TextDecoder().decode(text), terminated: matcher.isTerminated() };
};

// The engine in its Web Worker, given bytes that are not a model: the error must come from the
// wasm module running inside the worker.
window.engineError = async () => {
  try {
    const engine = await createEngine({ model: new TextEncoder().encode("not a model at all") });
    engine.unload();
    return "loaded";
  } catch (err) {
    return String(err?.message ?? err);
  }
};
window.ready = true;
`;

let ctx;
before(async () => {
  await installTarball(APP, "vite-app");
  await writeFile(new URL("index.html", APP), HTML);
  await writeFile(new URL("main.js", APP), MAIN);
  // A relative base: the built app is served from a folder of the repository server.
  await build({ root: fileURLToPath(APP), base: "./", configFile: false, logLevel: "warn" });
  ctx = await start();
});
after(async () => {
  await ctx?.close();
});

test("vite build bundles the package: the app, its wasm and the engine's worker", async () => {
  const assets = await readdir(new URL("dist/assets/", APP));
  assert.ok(assets.some((f) => f.endsWith(".wasm")), `no wasm emitted: ${assets}`);
  const js = assets.filter((f) => f.endsWith(".js"));
  // The engine's worker is a chunk of its own (Vite bundles `new Worker(new URL(...))`).
  const sources = await Promise.all(js.map((f) => readFile(new URL(`dist/assets/${f}`, APP), "utf8")));
  assert.ok(sources.some((s) => s.includes("self.onmessage") && !s.includes("window.lowLevel")), `no worker chunk among ${js}`);
});

/** Opens the app at `appUrl` and checks the low-level API and the engine's worker. */
async function checkApp(appUrl, tokenizerUrl, seeds) {
  const { page, errors } = ctx;
  errors.length = 0;
  await page.goto(appUrl);
  await page.waitForFunction(() => window.ready === true);

  for (const seed of seeds) {
    const low = await page.evaluate(([url, seed]) => window.lowLevel(url, seed), [tokenizerUrl, seed]);
    assert.ok(low.size > 100_000, `the Llama-3 vocabulary has ${low.size} tokens`);
    for (const step of low.steps) {
      assert.deepEqual(step.wrong, [], `after ${JSON.stringify(step.text)}: these token bits are wrong`);
      assert.ok(step.allowed > 0, `nothing allowed after ${JSON.stringify(step.text)}`);
    }
    assert.ok(low.terminated, `the walk did not end: ${JSON.stringify(low)}`);
    assert.match(low.text, /^\{"ok":(true|false)\}$/);
  }

  const message = await page.evaluate(() => window.engineError());
  assert.match(message, /not a GGUF file/, `the worker's error: ${message}`);
  assert.deepEqual(errors, []);
}

test("the bundled app masks tokens exactly and starts the engine's worker", { timeout: 10 * 60_000 }, async () => {
  await checkApp(`${ctx.url}tests/e2e/out/vite-app/dist/index.html`, "/assets/tokenizers/llama3.json", [1, 2, 3]);
});

test("the app on Vite's dev server, with sieve-web left out of dependency pre-bundling", { timeout: 10 * 60_000 }, async () => {
  // As the package's README says: pre-bundling would move the package away from its worker and
  // wasm files.
  const server = await createServer({
    root: fileURLToPath(APP),
    configFile: false,
    logLevel: "warn",
    optimizeDeps: { exclude: ["sieve-web"] },
    server: { host: "127.0.0.1", port: 0, strictPort: false, fs: { allow: [ROOT] } },
  });
  await server.listen();
  try {
    const { port } = server.httpServer.address();
    await checkApp(`http://127.0.0.1:${port}/`, `/@fs${ROOT}assets/tokenizers/llama3.json`, [4]);
  } finally {
    await server.close();
  }
});
