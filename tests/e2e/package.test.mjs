// The packed npm tarball in a plain page (no bundler): `npm pack web/pkg`, install the tarball,
// and import it from an HTML page. The low-level API masks tokens for a tokenizer.json, and the
// engine runs one constrained completion with the real model on each device: WebGPU (here
// SwiftShader) and the CPU, on one thread and on two (the page is cross-origin isolated, so the
// second thread is a helper worker holding half of each product's rows), with the same greedy
// answer.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { start } from "./browser.mjs";
import { installTarball } from "./pack.mjs";

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
      return { isSieve: e instanceof SieveError, isError: e instanceof Error, name: e.name, kind: e.kind, keyword: e.keyword, pointer: e.pointer, offset: e.offset, line: e.line, column: e.column, message: e.message };
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
    };
    return { size: vocab.size, warmed, allowed: allowed.map(text), jump: matcher.jumpForward(), shortError, sameAgain, extra: longer[vocab.maskWords], errors };
  };
  window.complete = async (device, threads) => {
    const engine = await createEngine({ model: "/assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", device, threads });
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

let ctx;
before(async () => {
  await installTarball(APP, "package-app");
  await writeFile(new URL("index.html", APP), PAGE);
  ctx = await start();
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

  const answers = [];
  for (const [device, threads] of [["webgpu", null], ["cpu", 1], ["cpu", 2]]) {
    const r = await page.evaluate(([device, threads]) => window.complete(device, threads), [device, threads]);
    assert.equal(r.info.device, device);
    assert.equal(r.info.threads, threads, `${device}, ${threads} threads`);
    assert.equal(r.object, "text_completion");
    assert.match(r.choices[0].text, /^ (yes|no)$/);
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.ok(r.usage.completion_tokens >= 1);
    answers.push(r.choices[0].text);
    assertSieveErrors(r.errors, `the engine on ${device}`);
    assert.equal(r.after, 1, "the engine works after the bad requests");
  }
  assert.deepEqual(answers, Array(3).fill(answers[0]), "WebGPU and the CPU on one and two threads answer alike");
  assert.deepEqual(errors, []);
});
