// The demo page in a real headless Chromium with the real SmolLM2 model: the device picker's
// `auto` puts the model on the CPU, since Chromium's only WebGPU adapter here is SwiftShader (a
// software one), on a thread per core (the page is cross-origin isolated); a JSON-schema preset streams output that parses and validates against the
// schema (checked here with Ajv, independently of sieve); a bad schema shows an error next to
// the editor and the next run works; the tools preset shows a call whose arguments Ajv accepts;
// a second family (a random-weight Qwen3 with the real Qwen3 tokenizer) loads by URL and its
// output validates.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { start } from "./browser.mjs";
import { PRESETS } from "../../web/presets.js";

// A slow machine, or WebGPU on SwiftShader, takes seconds per forward pass.
const RUN_TIMEOUT = 15 * 60_000;

let ctx;
before(async () => {
  ctx = await start();
});
after(async () => {
  await ctx?.close();
});

async function screenshot(page, name) {
  await mkdir(new URL("./out/", import.meta.url), { recursive: true });
  await page.screenshot({ path: new URL(`./out/${name}.png`, import.meta.url).pathname, fullPage: true });
}

/** Clicks Generate and waits for the run to end; returns the output text and its state. */
async function generate(page) {
  await page.click("#run");
  await page.waitForFunction(() => ["done", "error"].includes(document.getElementById("output").dataset.state), null, {
    timeout: RUN_TIMEOUT,
  });
  return {
    state: await page.getAttribute("#output", "data-state"),
    text: await page.textContent("#output"),
    error: (await page.isVisible("#constraint-error")) ? await page.textContent("#constraint-error") : null,
  };
}

test("the demo page generates schema-valid JSON with the real model, and recovers from a bad schema", { timeout: 4 * RUN_TIMEOUT }, async () => {
  const { page, url, errors } = ctx;
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.engine !== "loading", null, { timeout: RUN_TIMEOUT });
  const status = await page.textContent("#load-status");
  assert.equal(await page.getAttribute("body", "data-engine"), "ready", `the model did not load: ${status}`);
  assert.equal(await page.getAttribute("#load-status", "data-device"), "cpu", status);
  // The page is cross-origin isolated: a thread per core, the extra ones helper workers.
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const threads = cores === 1 ? "1 thread" : `${cores} threads`;
  assert.match(status, new RegExp(`on the CPU \\(${threads}; the WebGPU adapter, .*, is a software one\\)`));

  // A JSON-schema preset: the output parses and Ajv accepts it.
  const preset = PRESETS.find((p) => p.id === "form");
  await page.selectOption("#preset", preset.id);
  const first = await generate(page);
  assert.equal(first.state, "done", `the run failed: ${first.error}`);
  const value = JSON.parse(first.text);
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  assert.ok(ajv.validate(preset.source, value), `${first.text} does not match the schema: ${ajv.errorsText()}`);
  assert.ok(await page.locator("#output .sampled").count(), "no sampled text was shown");
  assert.ok(await page.locator("#output .forced").count(), "no forced text was shown");
  assert.notEqual(await page.textContent("#fig-tps"), "–");
  await screenshot(page, "demo");

  // A schema with a typo: the error names the keyword and its place, next to the editor.
  await page.fill("#constraint", JSON.stringify({ type: "object", properties: { age: { type: "integr" } } }));
  const bad = await generate(page);
  assert.equal(bad.state, "error");
  assert.match(bad.error ?? "", /type/);
  assert.match(bad.error ?? "", /properties\/age/);
  await screenshot(page, "demo-error");

  // The engine is still usable: a short regex run.
  await page.selectOption("#kind", "regex");
  await page.fill("#constraint", "(yes|no)");
  await page.fill("#prompt", "Is Paris the capital of France? Answer yes or no.");
  const next = await generate(page);
  assert.equal(next.state, "done", `the run after the error failed: ${next.error}`);
  assert.match(next.text, /^(yes|no)$/);

  // The tools preset: one call, shown as name(arguments), the arguments valid for that tool.
  const tools = PRESETS.find((p) => p.id === "tools");
  await page.selectOption("#preset", tools.id);
  const call = await generate(page);
  assert.equal(call.state, "done", `the tool run failed: ${call.error}`);
  const [, name, args] = call.text.match(/^(\w+)\((.*)\)$/s) ?? [];
  const tool = tools.source.find((t) => t.function.name === name);
  assert.ok(tool, `no tool call in ${JSON.stringify(call.text)}`);
  assert.ok(ajv.validate(tool.function.parameters, JSON.parse(args)), `${args}: ${ajv.errorsText()}`);
  assert.match(await page.textContent("#verdict"), new RegExp(`Called ${name}`));
  await screenshot(page, "demo-tools");
  assert.deepEqual(errors, []);
});

test("the demo page loads a second family by URL and generates schema-valid JSON with it", { timeout: 2 * RUN_TIMEOUT }, async () => {
  // A small random-weight Qwen3 with the real Qwen3 tokenizer and chat template
  // (scripts/tiny-models.py), picked by `?model=`: whatever the weights say, the constraint
  // keeps the output valid.
  const { page, url, errors } = ctx;
  await page.goto(`${url}?model=/assets/tiny-models/qwen3-chat.gguf`);
  await page.waitForFunction(() => document.body.dataset.engine !== "loading", null, { timeout: RUN_TIMEOUT });
  const status = await page.textContent("#load-status");
  assert.equal(await page.getAttribute("body", "data-engine"), "ready", `the model did not load: ${status}`);
  assert.match(status, /^tiny Qwen3 \(random weights\) \(qwen3\) ready on the CPU/);
  assert.equal(await page.inputValue("#model"), "url");
  assert.match(await page.inputValue("#model-url"), /\/assets\/tiny-models\/qwen3-chat\.gguf$/);

  const schema = {
    type: "object",
    properties: { name: { type: "string", maxLength: 12 }, admin: { type: "boolean" }, tags: { type: "array", items: { enum: ["a", "b"] }, maxItems: 3 } },
    required: ["name", "admin", "tags"],
    additionalProperties: false,
  };
  await page.selectOption("#kind", "json_schema");
  await page.fill("#constraint", JSON.stringify(schema));
  await page.fill("#prompt", "Describe a person as JSON.");
  await page.fill("#max-tokens", "200");
  const out = await generate(page);
  assert.equal(out.state, "done", `the run failed: ${out.error}`);
  const ajv = new Ajv2020({ strict: false });
  assert.ok(ajv.validate(schema, JSON.parse(out.text)), `${out.text} does not match the schema: ${ajv.errorsText()}`);
  await screenshot(page, "demo-qwen3");
  assert.deepEqual(errors, []);
});
