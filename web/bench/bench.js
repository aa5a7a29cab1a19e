// The browser benchmark: the MaskBench protocol in wasm for sieve and for web-xgrammar in the
// same page (instances.json comes from bench/browser_instances.py), decode tokens/s of the
// model with and without a constraint, and prefill and decode speed of sieve and wllama on the
// same model and prompt. Results land in the table and in `window.benchResults`.
import { init, Vocabulary, Constraint, Matcher, createEngine } from "../pkg/index.js";

// web-xgrammar ships a UMD bundle: index.html loads it as a classic script, which sets `xgrammar`.
const { GrammarCompiler, GrammarMatcher, TokenizerInfo } = globalThis.xgrammar;

const $ = (id) => document.getElementById(id);
const TOKENIZER_URL = new URL("../../assets/tokenizers/llama3.json", import.meta.url);
// `?model=URL` benchmarks another GGUF (the speed benchmark of bench/speed.mjs --model).
const MODEL_URL = new URL(new URLSearchParams(location.search).get("model") ?? "../../assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", import.meta.url);
const PROMPT_URL = new URL("../../bench/prompt.txt", import.meta.url);
const PERSON_SCHEMA_URL = new URL("../../bench/person.schema.json", import.meta.url);
const WLLAMA_WASM_URL = new URL("./node_modules/@wllama/wllama/esm/wasm/wllama.wasm", import.meta.url);

function quantile(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * q))] : NaN;
}

const ascending = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => quantile(ascending(xs), 0.5);
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

function percentiles(xs) {
  const s = ascending(xs);
  return { p50: quantile(s, 0.5), p90: quantile(s, 0.9), p99: quantile(s, 0.99), max: s.at(-1), mean: mean(s) };
}

/** Summary of one engine's run. */
function summarise(engine, run) {
  return {
    engine,
    rounds: run.rounds,
    schemas: run.schemas,
    compileErrors: run.compileErrors,
    rejectedTests: run.rejectedTests,
    tokens: run.maskUs.length,
    maskUs: percentiles(run.maskUs),
    compileUs: percentiles(run.compileUs),
  };
}

/** Rounds of sieve's run (about a second each). */
const SIEVE_ROUNDS = 7;

/** The mean of a mask's readings less those a hiccup of the machine (a preemption, a garbage
 * collection) put more than two steps and a tenth above their median. */
const readingsMean = (xs) => {
  const m = median(xs);
  return mean(xs.filter((x) => x <= m + 10 + 0.1 * m));
};

/**
 * Runs the protocol `rounds` times, compiling every schema afresh each time so that each round
 * does the same work. A mask's time is the mean of its readings: `performance.now()` moves in
 * 5 µs steps, as long as a typical mask, and a mask starts at a different point of a step in
 * each round, so the mean of whole steps converges on its time (see `readingsMean`). A
 * compile's is the median.
 */
async function protocolRounds(instances, compile, rounds) {
  const runs = [];
  for (let r = 0; r < rounds; r++) runs.push(await protocol(instances, compile));
  const each = (key, f) => runs[0][key].map((_, i) => f(runs.map((run) => run[key][i])));
  return { ...runs[0], rounds, maskUs: each("maskUs", readingsMean), compileUs: each("compileUs", median) };
}

/** Runs the protocol once: `compile(schema)` gives a matcher factory; a matcher's `step(token)`
 * computes the full mask and commits the token, returning false when the token is refused. */
async function protocol(instances, compile) {
  const run = { schemas: 0, compileErrors: 0, rejectedTests: 0, maskUs: [], compileUs: [] };
  for (const inst of instances) {
    run.schemas += 1;
    let factory;
    const t0 = performance.now();
    try {
      factory = await compile(inst.schema);
    } catch {
      run.compileErrors += 1;
      continue;
    }
    run.compileUs.push((performance.now() - t0) * 1000);
    for (const tokens of inst.tokens) {
      const matcher = await factory();
      for (const token of tokens) {
        const t = performance.now();
        // An engine with a synchronous API is not charged for an await.
        let ok = matcher.step(token);
        if (ok instanceof Promise) ok = await ok;
        run.maskUs.push((performance.now() - t) * 1000);
        if (!ok) {
          run.rejectedTests += 1;
          break;
        }
      }
      matcher.free?.();
    }
  }
  return run;
}

async function sieveRun(instances, tokenizerJson) {
  await init();
  const vocab = Vocabulary.fromTokenizerJson(tokenizerJson);
  // As the package's README asks (and the engine does while the model loads).
  vocab.warmUp();
  const mask = new Uint32Array(vocab.maskWords);
  return protocolRounds(instances, (schema) => {
    const constraint = Constraint.jsonSchema(schema, { mode: "lenient" });
    return () => {
      const m = new Matcher(constraint, vocab);
      return {
        step(token) {
          m.fillNextTokenBitmask(mask);
          if (!(mask[token >>> 5] & (1 << (token & 31)))) return false;
          m.acceptToken(token);
          return true;
        },
        free: () => m.free(),
      };
    };
  }, SIEVE_ROUNDS);
}

async function xgrammarRun(instances, tokenizerJson) {
  const tok = JSON.parse(tokenizerJson);
  const encoded = [];
  for (const [piece, id] of Object.entries(tok.model.vocab)) encoded[id] = piece;
  for (const added of tok.added_tokens ?? []) encoded[added.id] = added.content;
  for (let i = 0; i < encoded.length; i++) encoded[i] ??= "";
  const info = await TokenizerInfo.createTokenizerInfo(encoded, "byte_level", false);
  const compiler = await GrammarCompiler.createGrammarCompiler(info);
  // One round: the compiler keeps what it compiled, so a second round would not redo the work.
  const run = await protocolRounds(instances, async (schema) => {
    const compiled = await compiler.compileJSONSchema(JSON.stringify(schema), true, undefined, undefined, false);
    return async () => {
      const m = await GrammarMatcher.createGrammarMatcher(compiled);
      return {
        async step(token) {
          const mask = await m.getNextTokenBitmask();
          if (!(mask[token >>> 5] & (1 << (token & 31)))) return false;
          return m.acceptToken(token);
        },
        free: () => m.dispose(),
      };
    };
  }, 1);
  compiler.dispose();
  info.dispose();
  return run;
}

function showMaskResults(rows) {
  const us = (x) => (Number.isFinite(x) ? x.toFixed(1) : "–");
  $("results").innerHTML =
    "<tr><th>engine</th><th>rounds</th><th>schemas</th><th>compile errors</th><th>valid rejected</th><th>tokens</th>" +
    "<th>mask p50 µs</th><th>p90</th><th>p99</th><th>max</th><th>mean</th><th>compile p50 µs</th><th>p99</th></tr>" +
    rows
      .map(
        (r) =>
          `<tr><td>${r.engine}</td><td>${r.rounds}</td><td>${r.schemas}</td><td>${r.compileErrors}</td><td>${r.rejectedTests}</td><td>${r.tokens}</td>` +
          `<td>${us(r.maskUs.p50)}</td><td>${us(r.maskUs.p90)}</td><td>${us(r.maskUs.p99)}</td><td>${us(r.maskUs.max)}</td>` +
          `<td>${us(r.maskUs.mean)}</td><td>${us(r.compileUs.p50)}</td><td>${us(r.compileUs.p99)}</td></tr>`,
      )
      .join("");
}

async function runMasks() {
  document.body.dataset.state = "running";
  $("status").textContent = "Loading the instances and the tokenizer…";
  const [{ instances }, tokenizerJson] = await Promise.all([
    fetch(new URL("./instances.json", import.meta.url)).then((r) => {
      if (!r.ok) throw new Error("web/bench/instances.json is missing: make it with bench/browser_instances.py (see its help)");
      return r.json();
    }),
    fetch(TOKENIZER_URL).then((r) => r.text()),
  ]);
  const rows = [];
  for (const [name, run] of [["sieve", sieveRun], ["web-xgrammar", xgrammarRun]]) {
    $("status").textContent = `Running ${name} on ${instances.length} schemas…`;
    rows.push(summarise(name, await run(instances, tokenizerJson)));
    showMaskResults(rows);
  }
  window.benchResults = { ...window.benchResults, masks: rows };
  $("status").textContent = "Done.";
  document.body.dataset.state = "done";
}

async function runDecode() {
  document.body.dataset.state = "running";
  $("status").textContent = "Loading the model…";
  const engine = await createEngine({ model: MODEL_URL.href });
  // The prompt and schema of `sieve bench-decode`'s figures (bench/person.schema.json), so that
  // the page's and the native jump-forward gains are measured on the same text.
  const messages = [{ role: "user", content: "Describe a person as JSON with name, age, city and email." }];
  const person = await fetch(PERSON_SCHEMA_URL).then((r) => r.json());
  // Each round's schema is new to the engine (a bound no answer reaches), so its compile is part
  // of the time to first token.
  const schemaOf = (round) => ({ ...person, properties: { ...person.properties, name: { type: "string", maxLength: 100 + round } } });
  // Enough for the whole object, so that both constrained runs finish the same text.
  const tokens = 48;
  const rounds = 5;
  // A first short run compiles the shader pipelines, so no measured run pays for them.
  $("status").textContent = "Warming up…";
  await engine.chat.completions.create({ messages, max_tokens: 2 });
  const runs = { unconstrained: [], constrained: [], jump_forward: [] };
  for (let round = 0; round < rounds; round++) {
    const schema = { type: "json_schema", json_schema: { name: "person", schema: schemaOf(round) } };
    // Jump-forward is off but in the last run, so every token is one decode step under the mask;
    // the last run decodes the same text with forced text prefilled.
    const formats = { unconstrained: [{ type: "text" }, false], constrained: [schema, false], jump_forward: [schema, true] };
    for (const [name, [format, jump_forward]] of Object.entries(formats)) {
      $("status").textContent = `Round ${round + 1} of ${rounds}: decoding ${tokens} tokens ${name}…`;
      const r = await engine.chat.completions.create({ messages, response_format: format, max_tokens: tokens, jump_forward });
      const t = r.usage.timings;
      // The first token comes with the prompt's prefill (and, constrained, the compile of the
      // new schema, overlapped with it); the rest are one decode step each.
      const steps = r.usage.completion_tokens - 1;
      runs[name].push({
        text: r.choices[0].message.content,
        tokens: r.usage.completion_tokens,
        total_ms: t.total_ms,
        forward_passes: t.forward_passes,
        ttft_ms: t.ttft_ms,
        compile_ms: t.compile_ms,
        decode_ms_per_token: (t.total_ms - t.ttft_ms) / steps,
        launches_per_pass: t.launches_per_pass,
        mask_us_p50: t.mask_us_p50,
        constraint_ms: t.constraint_ms,
      });
    }
  }
  engine.unload();
  // Medians over the rounds, which alternate, so that a slow spell of the machine hits both.
  const out = { rounds };
  for (const [name, rs] of Object.entries(runs)) {
    const numbers = Object.keys(rs[0]).filter((k) => k !== "text");
    out[name] = Object.fromEntries(numbers.map((k) => [k, median(rs.map((r) => r[k]))]));
    out[name].decode_tokens_per_s = 1000 / out[name].decode_ms_per_token;
    out[name].text = rs[0].text;
  }
  // Jump-forward prefills forced text as the tokenizer splits it, which can differ from the
  // tokens the mask leads greedy decoding to, and so change the rest of the text: its gain is
  // measured on the rounds whose texts are the same.
  const same = runs.constrained.map((r, i) => r.text === runs.jump_forward[i].text);
  out.jump_forward_same_text_rounds = same.filter(Boolean).length;
  // Time per decoded token, constrained over unconstrained.
  out.constrained_over_unconstrained = out.constrained.decode_ms_per_token / out.unconstrained.decode_ms_per_token;
  // The constrained run's time in the constraint beyond the free run's in its own masks, over
  // the free run's time: the constraint's cost without the noise of two runs' whole times.
  out.constraint_cost_pct = median(runs.constrained.map((r, i) => ((r.constraint_ms - runs.unconstrained[i].constraint_ms) / runs.unconstrained[i].total_ms) * 100));
  // Time to first token of a new schema over unconstrained (target: at most 1.1).
  out.ttft_over_unconstrained = out.constrained.ttft_ms / out.unconstrained.ttft_ms;
  // What jump-forward saves of the constrained run's passes and time.
  const gain = (key) => {
    const ratios = runs.constrained.flatMap((r, i) => (same[i] ? [runs.jump_forward[i][key] / r[key]] : []));
    return ratios.length ? (1 - median(ratios)) * 100 : null;
  };
  out.jump_forward_fewer_passes_pct = gain("forward_passes");
  out.jump_forward_less_time_pct = gain("total_ms");
  window.benchResults = { ...window.benchResults, decode: out };
  $("status").textContent = `Decode: ${JSON.stringify(out)}`;
  document.body.dataset.state = "done";
}

/**
 * Times one streamed completion from the page: prefill is the prompt's tokens over the time to
 * the first text, decode the tokens after the first over the time after it. `stream` yields
 * chunks whose `choices[0].text` is new text; the last one has `usage`.
 */
async function timeStream(start, stream) {
  let first = null;
  let usage = null;
  let text = "";
  for await (const chunk of stream) {
    const piece = chunk.choices?.[0]?.text ?? "";
    if (piece && first === null) first = performance.now();
    text += piece;
    usage = chunk.usage ?? usage;
  }
  const end = performance.now();
  const tokens = usage.completion_tokens;
  return {
    prompt_tokens: usage.prompt_tokens,
    tokens,
    prefill_tokens_per_s: (usage.prompt_tokens * 1000) / (first - start),
    decode_tokens_per_s: ((tokens - 1) * 1000) / (end - first),
    text,
  };
}

/** sieve's engine on `device` (`threads` on the CPU, one when the page is not cross-origin
 * isolated): one streamed raw completion of `prompt`, greedy. */
async function sieveSpeed(device, threads) {
  const engine = await createEngine({ model: MODEL_URL.href, device, threads });
  return {
    engine: "sieve",
    device: engine.info.device,
    threads: engine.info.threads,
    run: async (prompt, tokens) => {
      const start = performance.now();
      const stream = await engine.completions.create({ prompt, max_tokens: tokens, temperature: 0, jump_forward: false, stream: true });
      return timeStream(start, stream);
    },
    close: () => engine.unload(),
  };
}

/** wllama (llama.cpp in wasm) on the CPU with `threads` threads (1 when the page is not
 * cross-origin isolated): its wasm from this page's node_modules, never a CDN. */
async function wllamaSpeed(threads) {
  const { Wllama } = await import("./node_modules/@wllama/wllama/esm/index.js");
  const wllama = new Wllama({ default: WLLAMA_WASM_URL.href }, { suppressNativeLog: true, logger: { ...console, debug() {}, log() {}, info() {}, warn() {} } });
  wllama.setCompat(null);
  const model = await fetch(MODEL_URL).then((r) => r.blob());
  await wllama.loadModel([model], { n_threads: threads, n_gpu_layers: 0, n_ctx: 1024 });
  return {
    engine: "wllama",
    device: "cpu",
    threads: crossOriginIsolated ? threads : 1,
    run: async (prompt, tokens) => {
      const start = performance.now();
      // A fresh prompt each time (no prompt cache), exactly `tokens` tokens (no end of sequence).
      const stream = await wllama.createCompletion({ prompt, max_tokens: tokens, temperature: 0, stream: true, cache_prompt: false, ignore_eos: true });
      return timeStream(start, stream);
    },
    close: () => wllama.exit(),
  };
}

/**
 * Prefill and decode tokens/s of each engine named in the query (`?engines=sieve,wllama`), on
 * the same model and prompt (bench/prompt.txt), greedy, `tokens` tokens: a first run warms up,
 * then the median of `rounds`. Query: `device` (sieve's: cpu or webgpu), `threads` (both
 * engines', on the CPU), `tokens`, `rounds`.
 */
async function runSpeed() {
  document.body.dataset.state = "running";
  const q = new URLSearchParams(location.search);
  const engines = (q.get("engines") ?? "sieve,wllama").split(",");
  const tokens = Number(q.get("tokens") ?? 64);
  const rounds = Number(q.get("rounds") ?? 3);
  const prompt = (await fetch(PROMPT_URL).then((r) => r.text())).trimEnd();
  const rows = [];
  for (const name of engines) {
    $("status").textContent = `Loading ${name}…`;
    const threads = Number(q.get("threads") ?? 1);
    const engine = name === "wllama" ? await wllamaSpeed(threads) : await sieveSpeed(q.get("device") ?? "cpu", threads);
    $("status").textContent = `Warming ${name} up…`;
    await engine.run(prompt, 4);
    const runs = [];
    for (let round = 0; round < rounds; round++) {
      $("status").textContent = `${name}: round ${round + 1} of ${rounds}…`;
      runs.push(await engine.run(prompt, tokens));
    }
    await engine.close();
    const med = (key) => median(runs.map((r) => r[key]));
    rows.push({
      engine: engine.engine,
      device: engine.device,
      threads: engine.threads,
      cross_origin_isolated: crossOriginIsolated,
      rounds,
      prompt_tokens: runs[0].prompt_tokens,
      tokens: runs[0].tokens,
      prefill_tokens_per_s: med("prefill_tokens_per_s"),
      decode_tokens_per_s: med("decode_tokens_per_s"),
      text: runs[0].text,
    });
  }
  window.benchResults = { ...window.benchResults, speed: rows };
  $("status").textContent = `Speed: ${JSON.stringify(rows)}`;
  document.body.dataset.state = "done";
}

function guard(fn) {
  return () =>
    fn().catch((err) => {
      $("status").textContent = `Error: ${err?.message ?? err}`;
      document.body.dataset.state = "error";
    });
}

$("run-masks").addEventListener("click", guard(runMasks));
$("run-decode").addEventListener("click", guard(runDecode));
$("run-speed").addEventListener("click", guard(runSpeed));
