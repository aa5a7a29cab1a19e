// The demo page: loads the chosen model (SmolLM2 served with the page, a preset from Hugging
// Face, or any GGUF URL; `?model=URL` picks one at start) through sieve's engine (in a Web
// Worker) on the chosen device, then runs the chosen constraint on a prompt, streaming forced
// and sampled text in different colours.
import { createEngine } from "./pkg/index.js";
import { PRESETS, sourceText } from "./presets.js";

const HF = "https://huggingface.co";
/** The model picker's presets: GGUF URLs (the browser caches what it downloads). */
const MODELS = {
  smollm2: new URL("../assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", import.meta.url).href,
  "qwen3-0.6b": `${HF}/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf`,
  "qwen2.5-0.5b": `${HF}/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf`,
  "llama3.2-1b": `${HF}/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf`,
  "gemma3-270m": `${HF}/ggml-org/gemma-3-270m-it-GGUF/resolve/main/gemma-3-270m-it-Q8_0.gguf`,
};
const $ = (id) => document.getElementById(id);
const ui = {
  model: $("model"),
  modelUrl: $("model-url"),
  modelUrlLabel: $("model-url-label"),
  load: $("load"),
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

/** The request's constraint for the editor's contents: a `response_format`, or `tools` with one
 * call required; throws with a message for the editor. */
function constraintOptions() {
  if (!ui.constrained.checked) return { response_format: { type: "text" } };
  const text = ui.constraint.value;
  const json = (what) => {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new Error(`The ${what} are not valid JSON: ${err.message}`.replace("schema are", "schema is"));
    }
  };
  switch (ui.kind.value) {
    case "json_schema":
      return { response_format: { type: "json_schema", json_schema: { name: "demo", schema: json("schema"), strict: true } } };
    case "tools":
      return { tools: json("tools"), tool_choice: "required", parallel_tool_calls: false };
    case "regex":
      return { response_format: { type: "regex", pattern: text } };
    default:
      return { response_format: { type: "grammar", grammar: text } };
  }
}

function appendText(text, forced, call = false) {
  const span = document.createElement("span");
  span.className = `${forced ? "forced" : "sampled"}${call ? " call" : ""}`;
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
  let options;
  try {
    options = constraintOptions();
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
      ...options,
      max_tokens: Number(ui.maxTokens.value) || 48,
      temperature: Number(ui.temperature.value) || 0,
      seed: 1,
      jump_forward: ui.jumpForward.checked,
      stream: true,
      signal: controller.signal,
    });
    const calls = [];
    for await (const chunk of stream) {
      const { content, tool_calls } = chunk.choices[0].delta;
      // A call shows as `name(arguments)`, its arguments streaming in.
      for (const piece of tool_calls ?? []) {
        if (piece.id) {
          calls[piece.index] = { name: piece.function.name, arguments: "" };
          appendText(`${ui.output.textContent ? "\n" : ""}${piece.function.name}(`, chunk.sieve?.forced, true);
        }
        calls[piece.index].arguments += piece.function.arguments;
      }
      const text = content || tool_calls?.map((p) => p.function.arguments).join("");
      if (text) {
        appendText(text, chunk.sieve?.forced, Boolean(tool_calls));
        chunks += 1;
        chars += text.length;
        if (chunk.sieve?.forced) forcedChars += text.length;
        showLiveFigures(start, chunks, forcedChars, chars);
      }
      if (chunk.usage) {
        if (calls.length) appendText(")", false, true);
        showFigures(chunk.usage);
        finish(chunk.choices[0].finish_reason, options, calls);
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

function finish(reason, options, calls) {
  ui.output.dataset.state = "done";
  const text = ui.output.textContent;
  let verdict = reason === "length" ? "Stopped at max tokens." : "Finished.";
  if (calls.length && reason !== "length") {
    const names = calls.map((c) => c.name).join(", ");
    verdict += ` Called ${names}: the arguments match ${calls.length === 1 ? "its" : "their"} schema by construction.`;
  }
  if (options.response_format?.type === "json_schema" && reason !== "length") {
    try {
      JSON.parse(text);
      verdict += " The output parses as JSON and matches the schema by construction.";
    } catch {
      verdict += " The output does not parse as JSON.";
    }
  }
  setStatus(ui.verdict, "ok", verdict);
}

/** The URL of the model the picker names: a preset's, or the one typed in. */
function modelUrl() {
  return ui.model.value === "url" ? ui.modelUrl.value.trim() : MODELS[ui.model.value];
}

/** Loads the model chosen in the pickers on the device chosen (`?model=` and `?device=` set
 * them at start). */
async function loadModel() {
  const url = modelUrl();
  if (!url) {
    setStatus(ui.loadStatus, "error", "Type the URL of a GGUF file.");
    return;
  }
  engine?.unload();
  engine = null;
  ui.run.disabled = true;
  document.body.dataset.engine = "loading";
  ui.loadProgress.value = 0;
  setStatus(ui.loadStatus, "pending", "Loading the model…");
  const where = (device) => (device === "cpu" ? "the CPU" : "the GPU");
  try {
    engine = await createEngine({
      model: url,
      device: ui.device.value,
      onProgress: ({ stage, fraction, loaded, total, device }) => {
        ui.loadProgress.value = fraction ?? 0;
        const mb = (n) => (n / 1e6).toFixed(0);
        const text = {
          download: `Downloading the model${device === "webgpu" ? " onto the GPU" : ""}: ${mb(loaded ?? 0)} of ${total ? mb(total) : "?"} MB`,
          cache: `Reading the model from the browser cache${device === "webgpu" ? " onto the GPU" : ""}: ${mb(loaded ?? 0)} MB`,
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
    const memory = info.device === "cpu" ? "in memory" : "of GPU memory";
    setStatus(ui.loadStatus, "ready", `${info.name} (${info.architecture}) ready ${on}: ${info.layers} layers, ${info.vocab} tokens, ${mb} MB of weights ${memory}.`);
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
  const params = new URLSearchParams(location.search);
  const asked = params.get("device");
  if ([...ui.device.options].some((o) => o.value === asked)) ui.device.value = asked;
  const model = params.get("model");
  if (model) {
    ui.model.value = "url";
    ui.modelUrl.value = new URL(model, location.href).href;
  }
  const showUrl = () => {
    ui.modelUrlLabel.hidden = ui.load.hidden = ui.model.value !== "url";
  };
  showUrl();
  ui.model.addEventListener("change", () => {
    showUrl();
    if (ui.model.value !== "url") loadModel();
  });
  ui.load.addEventListener("click", loadModel);
  ui.modelUrl.addEventListener("keydown", (e) => e.key === "Enter" && loadModel());
  ui.device.addEventListener("change", loadModel);
  loadModel();
}

start();
