// The demo page: loads SmolLM2 through sieve's engine (in a Web Worker) on the chosen device,
// then runs the chosen constraint on a prompt, streaming forced and sampled text in different
// colours.
import { createEngine } from "./pkg/index.js";
import { PRESETS, sourceText } from "./presets.js";

const MODEL_URL = new URL("../assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", import.meta.url);
const $ = (id) => document.getElementById(id);
const ui = {
  device: $("device"),
  loadStatus: $("load-status"),
  loadProgress: $("load-progress"),
  preset: $("preset"),
  kind: $("kind"),
  constraint: $("constraint"),
  constraintError: $("constraint-error"),
  prompt: $("prompt"),
  maxTokens: $("max-tokens"),
  temperature: $("temperature"),
  constrained: $("constrained"),
  jumpForward: $("jump-forward"),
  run: $("run"),
  stop: $("stop"),
  output: $("output"),
  verdict: $("verdict"),
};

let engine = null;
let controller = null;

function setStatus(el, state, text) {
  el.dataset.state = state;
  el.textContent = text;
}

function choosePreset(id) {
  const preset = PRESETS.find((p) => p.id === id) ?? PRESETS[0];
  ui.preset.value = preset.id;
  ui.kind.value = preset.kind;
  ui.constraint.value = sourceText(preset);
  ui.prompt.value = preset.prompt;
  ui.maxTokens.value = preset.maxTokens;
  showConstraintError(null);
}

function showConstraintError(message) {
  ui.constraintError.hidden = !message;
  ui.constraintError.textContent = message ?? "";
  ui.constraint.setAttribute("aria-invalid", message ? "true" : "false");
}

/** The response_format for the editor's contents; throws with a message for the editor. */
function responseFormat() {
  if (!ui.constrained.checked) return { type: "text" };
  const text = ui.constraint.value;
  switch (ui.kind.value) {
    case "json_schema": {
      let schema;
      try {
        schema = JSON.parse(text);
      } catch (err) {
        throw new Error(`The schema is not valid JSON: ${err.message}`);
      }
      return { type: "json_schema", json_schema: { name: "demo", schema, strict: true } };
    }
    case "regex":
      return { type: "regex", pattern: text };
    default:
      return { type: "grammar", grammar: text };
  }
}

function appendText(text, forced) {
  const span = document.createElement("span");
  span.className = forced ? "forced" : "sampled";
  span.textContent = text;
  ui.output.append(span);
}

function showFigures(usage) {
  const t = usage.timings;
  $("fig-tps").textContent = t.tokens_per_s.toFixed(2);
  $("fig-mask").textContent = `${fmtUs(t.mask_us_p50)} / ${fmtUs(t.mask_us_p99)}`;
  const share = usage.completion_tokens ? (100 * usage.forced_tokens) / usage.completion_tokens : 0;
  $("fig-forced").textContent = `${usage.forced_tokens} of ${usage.completion_tokens} (${share.toFixed(0)}%)`;
  $("fig-ttft").textContent = t.ttft_ms == null ? "–" : fmtMs(t.ttft_ms);
  $("fig-passes").textContent = String(t.forward_passes);
  $("fig-compile").textContent = fmtMs(t.compile_ms);
}

function showLiveFigures(start, chunks, forcedChars, chars) {
  const seconds = (performance.now() - start) / 1000;
  $("fig-tps").textContent = seconds > 0 ? `${(chunks / seconds).toFixed(2)} (live)` : "–";
  $("fig-forced").textContent = chars ? `${((100 * forcedChars) / chars).toFixed(0)}% of the text (live)` : "–";
}

const fmtUs = (us) => (us >= 1000 ? `${(us / 1000).toFixed(1)} ms` : `${us.toFixed(0)} µs`);
const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(1)} ms`);

async function run() {
  let format;
  try {
    format = responseFormat();
  } catch (err) {
    showConstraintError(err.message);
    return;
  }
  showConstraintError(null);
  ui.output.textContent = "";
  setStatus(ui.output, "running", "");
  setStatus(ui.verdict, "idle", "");
  ui.run.disabled = true;
  ui.stop.disabled = false;
  controller = new AbortController();
  const start = performance.now();
  let chunks = 0;
  let chars = 0;
  let forcedChars = 0;
  try {
    const stream = await engine.chat.completions.create({
      messages: [{ role: "user", content: ui.prompt.value }],
      response_format: format,
      max_tokens: Number(ui.maxTokens.value) || 48,
      temperature: Number(ui.temperature.value) || 0,
      seed: 1,
      jump_forward: ui.jumpForward.checked,
      stream: true,
      signal: controller.signal,
    });
    for await (const chunk of stream) {
      const content = chunk.choices[0].delta.content;
      if (content) {
        appendText(content, chunk.sieve?.forced);
        chunks += 1;
        chars += content.length;
        if (chunk.sieve?.forced) forcedChars += content.length;
        showLiveFigures(start, chunks, forcedChars, chars);
      }
      if (chunk.usage) {
        showFigures(chunk.usage);
        finish(chunk.choices[0].finish_reason, format);
      }
    }
  } catch (err) {
    if (err.name === "AbortError") {
      setStatus(ui.output, "done", ui.output.textContent);
      setStatus(ui.verdict, "idle", "Stopped.");
    } else {
      setStatus(ui.output, "error", ui.output.textContent);
      showConstraintError(err.message);
    }
  } finally {
    ui.run.disabled = false;
    ui.stop.disabled = true;
    controller = null;
  }
}

function finish(reason, format) {
  ui.output.dataset.state = "done";
  const text = ui.output.textContent;
  let verdict = reason === "length" ? "Stopped at max tokens." : "Finished.";
  if (format.type === "json_schema" && reason !== "length") {
    try {
      JSON.parse(text);
      verdict += " The output parses as JSON and matches the schema by construction.";
    } catch {
      verdict += " The output does not parse as JSON.";
    }
  }
  setStatus(ui.verdict, "ok", verdict);
}

/** Loads the model on the device chosen in the picker (`?device=` sets it at start). */
async function loadModel() {
  engine?.unload();
  engine = null;
  ui.run.disabled = true;
  document.body.dataset.engine = "loading";
  ui.loadProgress.value = 0;
  setStatus(ui.loadStatus, "pending", "Loading the model…");
  const where = (device) => (device === "cpu" ? "the CPU" : "the GPU");
  try {
    engine = await createEngine({
      model: MODEL_URL.href,
      device: ui.device.value,
      onProgress: ({ stage, fraction, loaded, total, device }) => {
        ui.loadProgress.value = fraction ?? 0;
        const mb = (n) => (n / 1e6).toFixed(0);
        const text = {
          download: `Downloading the model: ${mb(loaded ?? 0)} of ${total ? mb(total) : "?"} MB`,
          cache: `Reading the model from the browser cache: ${mb(loaded ?? 0)} MB`,
          weights: `Loading the weights for ${where(device)}: ${Math.round((fraction ?? 0) * 100)}%`,
          ready: "Ready.",
        }[stage];
        setStatus(ui.loadStatus, "pending", text);
      },
    });
    const info = engine.info;
    const on =
      info.device === "cpu"
        ? `on the CPU (${info.threads} thread${info.threads === 1 ? "" : "s"}${info.adapter ? `; the WebGPU adapter, ${info.adapter}, is a software one` : ""})`
        : `on WebGPU (${info.adapter || "adapter"})`;
    const mb = (info.weightBytes / 1e6).toFixed(0);
    setStatus(ui.loadStatus, "ready", `SmolLM2-135M-Instruct ready ${on}: ${info.layers} layers, ${info.vocab} tokens, ${mb} MB of weights.`);
    ui.loadStatus.dataset.device = info.device;
    ui.loadProgress.value = 1;
    document.body.dataset.engine = "ready";
    ui.run.disabled = false;
  } catch (err) {
    setStatus(ui.loadStatus, "error", String(err?.message ?? err));
    document.body.dataset.engine = "error";
  }
}

function start() {
  for (const p of PRESETS) ui.preset.append(new Option(p.label, p.id));
  choosePreset(PRESETS[0].id);
  ui.preset.addEventListener("change", () => choosePreset(ui.preset.value));
  ui.run.addEventListener("click", run);
  ui.stop.addEventListener("click", () => controller?.abort());
  ui.constraint.addEventListener("input", () => showConstraintError(null));
  const asked = new URLSearchParams(location.search).get("device");
  if ([...ui.device.options].some((o) => o.value === asked)) ui.device.value = asked;
  ui.device.addEventListener("change", loadModel);
  loadModel();
}

start();
