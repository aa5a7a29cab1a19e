// The packed npm tarball in a plain page (no bundler): `npm pack web/pkg`, install the tarball,
// and import it from an HTML page. The low-level API masks tokens for a tokenizer.json, and the
// engine runs one constrained completion with the real model on each device: WebGPU (here
// SwiftShader) and the CPU, on one thread and on two (the page is cross-origin isolated, so the
// second thread is a helper worker holding half of each product's rows), with the same greedy
// answer; tool calls, each call's arguments checked by Ajv; a model download that breaks off
// halfway and is taken up where it stopped; and on WebGPU, a model loaded as it arrives, kept
// whole in the Cache API.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { start } from "./browser.mjs";
import { installTarball } from "./pack.mjs";
import Ajv2020 from "ajv/dist/2020.js";

const APP = new URL("./out/package-app/", import.meta.url);

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>sieve-web from its tarball</title>
<script type="module">
  import { init, createEngine, Vocabulary, Constraint, Matcher, SieveError } from "./node_modules/sieve-web/index.js";
  const BAD_SCHEMA = { type: "object", properties: { n: { type: "integr" } } };
  // A compile error's fields, as the caller sees them.
  const caught = async (f) => {
    try { await f(); return null; } catch (e) {
      return { isSieve: e instanceof SieveError, isError: e instanceof Error, name: e.name, kind: e.kind, tool: e.tool, keyword: e.keyword, pointer: e.pointer, offset: e.offset, line: e.line, column: e.column, message: e.message };
    }
  };
  window.lowLevel = async () => {
    await init();
    const vocab = Vocabulary.fromTokenizerJson(await (await fetch("/assets/tokenizers/llama3.json")).text());
    const warmed = vocab.warmUp();
    const constraint = Constraint.jsonSchema({ type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false }, { whitespace: "compact" });
    const matcher = new Matcher(constraint, vocab);
    const mask = new Uint32Array(vocab.maskWords);
    matcher.fillNextTokenBitmask(mask);
    const allowed = [];
    mask.forEach((word, w) => { for (let b = 0; b < 32; b++) if (word & (1 << b)) allowed.push(w * 32 + b); });
    const text = (id) => new TextDecoder().decode(vocab.tokenBytes(id));
    // A mask too short is an error that changes nothing; a longer one keeps its extra words.
    let shortError = null;
    try { matcher.fillNextTokenBitmask(new Uint32Array(vocab.maskWords - 1)); } catch (e) { shortError = String(e?.message ?? e); }
    const longer = new Uint32Array(vocab.maskWords + 1).fill(7);
    matcher.fillNextTokenBitmask(longer);
    const sameAgain = mask.every((word, w) => longer[w] === word);
    const errors = {
      schema: await caught(() => Constraint.jsonSchema(BAD_SCHEMA)),
      regex: await caught(() => Constraint.regex("a(b")),
      text: await caught(() => Constraint.jsonSchema('{"type":\\n "object",}')),
      tag: await caught(() => Constraint.structuralTag({ structures: [{ begin: "<n>", end: "</n>" }], triggers: ["<n>"] })),
    };
    const tag = Constraint.structuralTag({ structures: [{ begin: "<n>", schema: { type: "integer" }, end: "</n>" }], triggers: ["<n>"] });
    const tagMatches = [tag.matches("Sum: <n>42</n>, done."), tag.matches("<n>4x</n>")];
    return { size: vocab.size, warmed, allowed: allowed.map(text), jump: matcher.jumpForward(), shortError, sameAgain, extra: longer[vocab.maskWords], errors, tagMatches };
  };
  window.complete = async (device, threads) => {
    // Two threads take the file's bytes (the demo page gives them a URL).
    const url = "/assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
    const model = threads === 2 ? await (await fetch(url)).arrayBuffer() : url;
    const engine = await createEngine({ model, device, threads });
    const r = await engine.completions.create({
      prompt: "Q: Is water wet? Answer yes or no.\\nA:",
      response_format: { type: "regex", pattern: " (yes|no)" },
      max_tokens: 4,
    });
    const info = engine.info;
    // Through the engine's worker: the schema fails as it is translated, the regex as it compiles
    // while the prompt prefills; the engine goes on working after both.
    const messages = [{ role: "user", content: "Hi" }];
    const errors = {
      schema: await caught(() => engine.chat.completions.create({ messages, max_tokens: 2, response_format: { type: "json_schema", json_schema: { name: "bad", schema: BAD_SCHEMA } } })),
      regex: await caught(() => engine.chat.completions.create({ messages, max_tokens: 2, response_format: { type: "regex", pattern: "a(b" } })),
    };
    const after = (await engine.completions.create({ prompt: "Hi", max_tokens: 1 })).usage.completion_tokens;
    engine.unload();
    return { ...r, info, errors, after };
  };
  // A context of 32 tokens: a longer prompt is that request's error, the next request works.
  window.context = async () => {
    const engine = await createEngine({ model: "/assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", device: "cpu", threads: 1, context: 32 });
    const long = await caught(() => engine.completions.create({ prompt: "word ".repeat(40), max_tokens: 1 }));
    const after = (await engine.completions.create({ prompt: "Hi", max_tokens: 1 })).usage.completion_tokens;
    const info = engine.info;
    const bad = await caught(() => createEngine({ model: "/assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", context: 0 }));
    engine.unload();
    return { long, after, info, bad };
  };
  // Tool calls on the CPU path: auto, required, a named tool, a bad tool and the request after
  // it, a second turn with the tool's result, a stream, and a structural tag.
  window.tools = async (TOOLS, example) => {
    const engine = await createEngine({ model: "/assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", device: "cpu", threads: 1 });
    const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
    const readme = await new AsyncFunction("engine", example + "\\nreturn { r, call, args, tools };")(engine);
    const question = (content) => [{ role: "user", content }];
    const ask = (content, extra = {}) => engine.chat.completions.create({ messages: question(content), tools: TOOLS, max_tokens: 40, ...extra });
    const out = {};
    out.autoWeather = await ask("What is the weather in Paris?");
    out.autoPlain = await ask("Write one word.");
    out.required = await ask("What is the weather in Paris?", { tool_choice: "required", parallel_tool_calls: false });
    out.named = await ask("What is 12 times 7?", { tool_choice: { type: "function", function: { name: "calculate" } } });
    const badTools = [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { x: { type: "integr" } } } } }];
    out.badTool = await caught(() => ask("Hi", { tools: badTools }));
    out.missingTool = await caught(() => ask("Hi", { tool_choice: { type: "function", function: { name: "nope" } } }));
    out.afterBad = await ask("What is 2 plus 2?", { tool_choice: "required" });
    const call = out.required.choices[0].message.tool_calls[0];
    const turn = [...question("What is the weather in Paris?"), { role: "assistant", content: null, tool_calls: [call] }, { role: "tool", tool_call_id: call.id, content: "18 C, sunny" }];
    out.second = await engine.chat.completions.create({ messages: turn, tools: TOOLS, tool_choice: "none", max_tokens: 30 });
    out.plain = await engine.chat.completions.create({ messages: question("What is the weather in Paris?"), max_tokens: 1 });
    out.stream = [];
    for await (const chunk of await ask("What is 12 times 7?", { tool_choice: "required", parallel_tool_calls: false, stream: true })) out.stream.push(chunk);
    out.unstreamed = await ask("What is 12 times 7?", { tool_choice: "required", parallel_tool_calls: false });
    out.structural = await engine.chat.completions.create({
      messages: question("Name a city in France."),
      max_tokens: 12,
      response_format: { type: "structural_tag", structures: [{ begin: "<city>", schema: { enum: ["Paris", "Lyon"] }, end: "</city>" }], triggers: ["<city>"], at_least_one: true, stop_after_first: true },
    });
    engine.unload();
    return { ...out, readme };
  };
  // A model by URL on \`device\`, through the Cache API where \`cache\`: the stages of its
  // progress, the bytes read, and a short greedy completion.
  window.fromUrl = async (model, device = "cpu", cache = false) => {
    const loaded = [];
    const stages = [];
    const onProgress = (p) => {
      if (stages.at(-1) !== p.stage) stages.push(p.stage);
      if (p.stage === "download" || p.stage === "cache") loaded.push([p.loaded, p.total]);
    };
    const engine = await createEngine({ model, device, threads: 1, cache, onProgress });
    const r = await engine.completions.create({ prompt: "Hi", max_tokens: 8 });
    const info = engine.info;
    engine.unload();
    return { loaded, stages, info, text: r.choices[0].text, tokens: r.usage.completion_tokens };
  };
  window.loadError = (model, device) => caught(() => createEngine({ model, device, cache: false }));
</script>`;

/** The bad schema's and the bad regex's errors keep their kind and place. */
function assertSieveErrors(errors, where) {
  const { schema, regex } = errors;
  for (const e of [schema, regex]) assert.ok(e?.isSieve && e.isError && e.name === "SieveError", `${where}: ${JSON.stringify(e)}`);
  assert.deepEqual([schema.kind, schema.keyword, schema.pointer], ["schema", "type", "/properties/n"], `${where}: ${JSON.stringify(schema)}`);
  assert.match(schema.message, /unknown type "integr"/);
  assert.equal(regex.kind, "regex", `${where}: ${JSON.stringify(regex)}`);
  assert.ok(Number.isInteger(regex.offset) && regex.line === 1 && Number.isInteger(regex.column), `${where}: ${JSON.stringify(regex)}`);
}

/** A model whose first download the server breaks off after 5 MB. */
const BROKEN = "/assets/tiny-models/qwen3-chat.gguf";
/** The same file under other paths, for the model loaded as it arrives on WebGPU: from a host
 * that serves ranges, and from one that answers every request with the whole file. */
const BROKEN_GPU = "/gpu/qwen3-chat.gguf";
const BROKEN_WHOLE = "/whole/qwen3-chat.gguf";

let ctx;
before(async () => {
  await installTarball(APP, "package-app");
  await writeFile(new URL("index.html", APP), PAGE);
  const tiny = fileURLToPath(new URL("../../assets/tiny-models/", import.meta.url));
  ctx = await start({
    mounts: { "/gpu/": tiny, "/whole/": tiny },
    breaks: { [BROKEN]: 5_000_000, [BROKEN_GPU]: 5_000_000, [BROKEN_WHOLE]: 5_000_000 },
    rangeless: ["/whole/"],
  });
});
after(async () => {
  await ctx?.close();
});

test("a plain page imports the packed tarball and runs a constrained completion", { timeout: 20 * 60_000 }, async () => {
  const { page, url, errors } = ctx;
  await page.goto(`${url}tests/e2e/out/package-app/index.html`);
  await page.waitForFunction(() => typeof window.complete === "function");

  const low = await page.evaluate(() => window.lowLevel());
  assert.ok(low.size > 100_000, `the Llama-3 vocabulary has ${low.size} tokens`);
  // The warm-up walks its sample documents to the end: a few hundred masks with Llama-3.
  assert.ok(low.warmed > 300, `the warm-up computed ${low.warmed} masks`);
  assert.ok(low.allowed.length > 0 && low.allowed.every((t) => t.startsWith("{")), JSON.stringify(low.allowed.slice(0, 20)));
  assert.equal(low.jump.text, '{"ok":');
  assert.match(low.shortError ?? "", /the mask has \d+ words; the vocabulary needs \d+/);
  assert.ok(low.sameAgain, "the mask after the error is the same as before");
  assert.equal(low.extra, 7);
  assertSieveErrors(low.errors, "low-level API");
  assert.deepEqual([low.errors.text.kind, low.errors.text.line, low.errors.text.column], ["schema", 2, 11], JSON.stringify(low.errors.text));
  assert.deepEqual([low.errors.tag?.kind, low.tagMatches], ["structural_tag", [true, false]], JSON.stringify(low.errors.tag));

  const answers = [];
  const infos = [];
  for (const [device, threads] of [["webgpu", null], ["cpu", 1], ["cpu", 2]]) {
    const r = await page.evaluate(([device, threads]) => window.complete(device, threads), [device, threads]);
    infos.push(r.info);
    assert.equal(r.info.device, device);
    assert.equal(r.info.threads, threads, `${device}, ${threads} threads`);
    assert.deepEqual([r.info.name, r.info.architecture, r.info.maxContext], ["Smollm2 135M 8k Lc100K Mix1 Ep2", "llama", 4096], JSON.stringify(r.info));
    assert.equal(r.object, "text_completion");
    assert.match(r.choices[0].text, /^ (yes|no)$/);
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.ok(r.usage.completion_tokens >= 1);
    answers.push(r.choices[0].text);
    assertSieveErrors(r.errors, `the engine on ${device}`);
    assert.equal(r.after, 1, "the engine works after the bad requests");
  }
  assert.deepEqual(answers, Array(3).fill(answers[0]), "WebGPU and the CPU on one and two threads answer alike");
  // The module's memory: on WebGPU, the parts pass through it one at a time on their way to
  // the GPU (it once took 2.1 times the weights: copies of the embedding on its way); on two
  // threads each worker keeps its own part of the rows alone, read as the file arrives (the
  // helper's part of the tied head is its only copy of the embedding's rows), so the two hold
  // the weights once, not the engine's copy and a helper's whole file and model.
  const [gpu, one, two] = infos;
  const mb = (info) => `${(info.memoryBytes / 1e6).toFixed(0)} MB of wasm memory, ${(info.weightBytes / 1e6).toFixed(0)} MB of weights`;
  console.log(`memory: WebGPU ${mb(gpu)}; CPU, one thread ${mb(one)}; two threads ${mb(two)}`);
  assert.ok(gpu.memoryBytes < 1.25 * gpu.weightBytes, `WebGPU: ${mb(gpu)}`);
  assert.ok(one.memoryBytes >= one.weightBytes && two.weightBytes >= one.weightBytes, `${mb(one)}; ${mb(two)}`);
  assert.ok(two.weightBytes < 1.25 * one.weightBytes, `two threads hold ${mb(two)}, one ${mb(one)}`);
  assert.ok(two.memoryBytes < 1.5 * one.memoryBytes, `two threads hold ${mb(two)}, one ${mb(one)}`);
  const context = await page.evaluate(() => window.context());
  assert.equal(context.info.maxContext, 32);
  assert.match(context.long?.message ?? "", /the context holds 32/, JSON.stringify(context.long));
  assert.equal(context.after, 1, "the engine works after the long prompt");
  assert.match(context.bad?.message ?? "", /`context` is a whole number/, JSON.stringify(context.bad));
  assert.deepEqual(errors, []);
});

/** A weather and a calculator tool, as OpenAI's API takes them. */
const TOOLS = [
  { type: "function", function: { name: "get_weather", description: "Get the current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" }, unit: { enum: ["celsius", "fahrenheit"] } }, required: ["city"], additionalProperties: false } } },
  { type: "function", function: { name: "calculate", description: "Evaluate an arithmetic expression",
    parameters: { type: "object", properties: { expression: { type: "string", maxLength: 40 } }, required: ["expression"], additionalProperties: false } } },
];

test("tool calls name a tool and carry arguments valid for its schema (Ajv)", { timeout: 10 * 60_000 }, async () => {
  const { page, url, errors } = ctx;
  await page.goto(`${url}tests/e2e/out/package-app/index.html`);
  await page.waitForFunction(() => typeof window.tools === "function");
  // The README's example, as it is written there.
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  const example = readme.split("<!-- tool example -->\n```js\n")[1]?.split("\n```")[0];
  assert.ok(example, "the README has its tool example");
  const out = await page.evaluate(([tools, example]) => window.tools(tools, example), [TOOLS, example]);
  const ajv = new Ajv2020({ strict: false });
  const validators = Object.fromEntries(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
  const calls = (r) => r.choices[0].message.tool_calls ?? [];
  const { readme: ran, ...completions } = out;
  const validateReadme = ajv.compile(ran.tools[0].function.parameters);
  assert.deepEqual([ran.r.choices[0].finish_reason, ran.call.function.name], ["tool_calls", "get_weather"], JSON.stringify(ran.r));
  assert.ok(validateReadme(ran.args), ajv.errorsText(validateReadme.errors));
  for (const [what, r] of Object.entries(completions).filter(([, r]) => r?.object === "chat.completion")) {
    const { message, finish_reason } = r.choices[0];
    assert.ok(["stop", "length", "tool_calls"].includes(finish_reason), `${what}: ${finish_reason}`);
    assert.equal(finish_reason === "tool_calls", calls(r).length > 0 && finish_reason !== "length", `${what}: ${JSON.stringify(message)}`);
    assert.ok(message.content === null ? calls(r).length > 0 : typeof message.content === "string", `${what}: ${JSON.stringify(message)}`);
    for (const c of calls(r)) {
      assert.equal(c.type, "function");
      assert.match(c.id, /^call_/);
      const validate = validators[c.function.name];
      assert.ok(validate, `${what}: no tool ${c.function.name}`);
      assert.ok(validate(JSON.parse(c.function.arguments)), `${what}: ${c.function.arguments}: ${ajv.errorsText(validate.errors)}`);
    }
  }
  assert.equal(out.required.choices[0].finish_reason, "tool_calls");
  assert.equal(calls(out.required).length, 1, "required without parallel calls: one call");
  assert.deepEqual(calls(out.named).map((c) => c.function.name), ["calculate"]);
  assert.ok(calls(out.afterBad).length >= 1, "the engine works after the bad requests");
  assert.deepEqual([out.badTool?.isSieve, out.badTool?.kind, out.badTool?.pointer], [true, "schema", "/properties/x"], JSON.stringify(out.badTool));
  assert.match(out.badTool.message, /tool "f"/);
  assert.deepEqual([out.missingTool?.isSieve, out.missingTool?.kind], [true, "tool"], JSON.stringify(out.missingTool));
  // The second turn: the call and its result go back through the template; `none` answers in text.
  assert.deepEqual(calls(out.second), []);
  assert.ok(out.second.usage.prompt_tokens > out.plain.usage.prompt_tokens + 20, "the second turn's prompt holds the call and its result");
  assert.doesNotMatch(out.second.choices[0].message.content, /<tool_call>/);
  // The stream's delta.tool_calls spell the same call as the whole reply.
  const streamed = [];
  for (const chunk of out.stream) {
    for (const d of chunk.choices[0].delta.tool_calls ?? []) {
      if (d.id) streamed[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: "" } };
      streamed[d.index].function.arguments += d.function.arguments;
    }
  }
  assert.equal(out.stream.at(-1).choices[0].finish_reason, "tool_calls");
  assert.deepEqual(streamed.map((c) => c.function), calls(out.unstreamed).map((c) => c.function));
  assert.match(out.structural.choices[0].message.content, /^<city>"(Paris|Lyon)"<\/city>$/);
  assert.deepEqual(errors, []);
});

test("a model download that breaks off is taken up where it stopped", { timeout: 5 * 60_000 }, async () => {
  const { page, url, errors, log } = ctx;
  await page.goto(`${url}tests/e2e/out/package-app/index.html`);
  await page.waitForFunction(() => typeof window.fromUrl === "function");
  const broken = await page.evaluate((model) => window.fromUrl(model), BROKEN);
  const asked = log.filter((r) => r.path === BROKEN);
  // The whole file, broken off, then the rest from where the page stopped reading.
  assert.deepEqual(asked.map((r) => r.status), [200, 206], JSON.stringify(asked));
  const resumedAt = Number(/^bytes=(\d+)-$/.exec(asked[1].range)?.[1]);
  const [size] = broken.loaded.at(-1).slice(1);
  assert.ok(resumedAt > 0 && resumedAt <= 5_000_000, `resumed at ${asked[1].range}`);
  assert.deepEqual(broken.loaded.at(-1), [size, size]);
  assert.ok(broken.loaded.every(([n], i) => i === 0 || n >= broken.loaded[i - 1][0]), "progress never goes back");
  // The same bytes as a download that did not break: the same greedy text.
  const whole = await page.evaluate((model) => window.fromUrl(model), BROKEN);
  assert.equal(log.filter((r) => r.path === BROKEN).length, 3);
  assert.ok(broken.tokens >= 1);
  assert.equal(broken.text, whole.text);
  assert.deepEqual(errors, []);
});

test("on WebGPU a model loads as it arrives, taken up where it broke off and kept whole in the Cache API", { timeout: 5 * 60_000 }, async () => {
  const { page, url, errors, log } = ctx;
  await page.goto(`${url}tests/e2e/out/package-app/index.html`);
  await page.waitForFunction(() => typeof window.fromUrl === "function");
  const broken = await page.evaluate((model) => window.fromUrl(model, "webgpu", true), BROKEN_GPU);
  assert.equal(broken.info.device, "webgpu");
  // The weights go to the GPU as the bytes arrive: no stage of their own after the download.
  assert.deepEqual(broken.stages, ["download", "ready"]);
  const asked = log.filter((r) => r.path === BROKEN_GPU);
  assert.deepEqual(asked.map((r) => r.status), [200, 206], JSON.stringify(asked));
  const [size] = broken.loaded.at(-1).slice(1);
  assert.deepEqual(broken.loaded.at(-1), [size, size]);
  assert.ok(broken.tokens >= 1);
  // The copy in the Cache API is whole: the next load reads it, asks the server nothing, and
  // answers alike.
  const cached = await page.evaluate((model) => window.fromUrl(model, "webgpu", true), BROKEN_GPU);
  assert.deepEqual(cached.stages, ["cache", "ready"]);
  assert.deepEqual(cached.loaded.at(-1), [size, size]);
  assert.equal(log.filter((r) => r.path === BROKEN_GPU).length, 2);
  assert.equal(cached.text, broken.text);
  // A host without ranges sends the whole file again: the bytes already placed are skipped.
  const restarted = await page.evaluate((model) => window.fromUrl(model, "webgpu", false), BROKEN_WHOLE);
  assert.deepEqual(log.filter((r) => r.path === BROKEN_WHOLE).map((r) => r.status), [200, 200]);
  assert.deepEqual(restarted.loaded.at(-1), [size, size]);
  assert.equal(restarted.text, broken.text);
  // A file that is not a model fails as its first bytes arrive, saying why.
  const notModel = await page.evaluate(() => window.loadError("/README.md", "webgpu"));
  assert.match(notModel?.message ?? "", /not a GGUF file/, JSON.stringify(notModel));
  assert.deepEqual(errors, []);
});
