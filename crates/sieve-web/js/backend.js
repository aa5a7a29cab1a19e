// The engine's working half: fetches (and caches) the model, loads it on WebGPU or on the CPU,
// and runs requests. It runs inside the Web Worker (worker.js) by default, or on the page itself.
import init, { Model } from "./sieve_web.js";
import { HelperPool, canUseHelpers } from "./parts.js";

const CACHE_NAME = "sieve-models-v1";

/** Times a broken download is taken up again where it stopped before the load fails. */
const RESUMES = 5;

/**
 * The model's bytes from `response` (the first answer for `url`), reporting `(loaded, total)` as
 * chunks arrive. Where the connection breaks off, the rest is asked for with a `Range` header
 * (after a short wait, up to RESUMES times) and read on from where it stopped; a server that
 * answers with the whole file instead starts it over. With a known length the bytes go straight
 * into one buffer of that size (chunks are gathered where the body turns out longer).
 */
async function download(url, response, report) {
  if (!response.body) return new Uint8Array(await response.arrayBuffer());
  const total = Number(response.headers.get("Content-Length")) || 0;
  let whole = total ? new Uint8Array(total) : null;
  let chunks = [];
  let loaded = 0;
  for (let resumes = 0; ; resumes++) {
    try {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (whole && loaded + value.length > total) {
          // More than Content-Length said (a compressed body's length): gather chunks instead.
          chunks = [whole.subarray(0, loaded)];
          whole = null;
        }
        if (whole) whole.set(value, loaded);
        else chunks.push(value);
        loaded += value.length;
        report(loaded, total);
      }
      if (total && loaded < total) throw new Error(`the body ended at ${loaded} of ${total} bytes`);
      break;
    } catch (err) {
      if (resumes === RESUMES) throw new Error(`the model download from ${url} broke off at ${loaded} of ${total || "?"} bytes (tried ${RESUMES + 1} times): ${err?.message ?? err}`);
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** resumes));
      response = await fetch(url, { headers: { Range: `bytes=${loaded}-` } }).catch(() => null);
      const range = /^bytes (\d+)-/.exec(response?.headers.get("Content-Range") ?? "");
      if (response?.status === 206 && range && Number(range[1]) === loaded) continue;
      if (response?.status !== 200) throw new Error(`the model download from ${url} broke off at ${loaded} bytes and could not be taken up again: ${response ? `HTTP ${response.status}` : err?.message ?? err}`);
      // The whole file again: start over.
      loaded = 0;
      chunks = [];
      whole = total ? new Uint8Array(total) : null;
    }
  }
  if (whole) return whole;
  whole = new Uint8Array(loaded);
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.length;
  }
  return whole;
}

/** The model bytes from a URL, through the Cache API when it is available and `useCache`. */
async function fetchModel(url, useCache, onProgress) {
  let cache = null;
  if (useCache && typeof caches !== "undefined") {
    cache = await caches.open(CACHE_NAME).catch(() => null);
  }
  const cached = cache && (await cache.match(url).catch(() => undefined));
  const stage = cached ? "cache" : "download";
  const response = cached ?? (await fetch(url));
  if (!response.ok) throw new Error(`could not fetch the model from ${url}: HTTP ${response.status}`);
  const bytes = await download(url, response, (loaded, total) =>
    onProgress({ stage, loaded, total, fraction: total ? loaded / total : null }),
  );
  if (cache && !cached) {
    await cache.put(url, new Response(bytes, { headers: { "Content-Type": "application/octet-stream" } })).catch(() => {});
  }
  return bytes;
}

/** The WebGPU adapter's description, and whether it is a GPU emulated on the CPU. */
function describeAdapter(adapter) {
  const info = adapter.info ?? {};
  const text = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(" ");
  const software = Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter) || /swiftshader|llvmpipe|lavapipe|basic render/i.test(text);
  return { text, software };
}

/**
 * Where the model runs for `requested` ("auto", "webgpu" or "cpu"), and the adapter seen:
 * "auto" takes WebGPU when its adapter is a real GPU and the CPU when it is a software one
 * (SwiftShader runs the GPU's work on the CPU, far slower than the CPU path) or there is none.
 */
async function chooseDevice(requested) {
  if (requested === "cpu") return { device: "cpu", adapter: null };
  const gpu = typeof navigator !== "undefined" ? navigator.gpu : undefined;
  const adapter = gpu ? await gpu.requestAdapter().catch(() => null) : null;
  const described = adapter ? describeAdapter(adapter) : null;
  if (requested === "webgpu") {
    if (!adapter) throw new Error("WebGPU is not available in this browser (no adapter); use device: \"cpu\" or \"auto\"");
    return { device: "webgpu", adapter: described.text };
  }
  return described && !described.software ? { device: "webgpu", adapter: described.text } : { device: "cpu", adapter: described?.text ?? null };
}

/**
 * Threads for the CPU path: `requested` (a number), or every core the browser reports; one
 * where this context cannot run helper workers (a page that is not cross-origin isolated, or
 * the engine on the page's main thread, which may not block).
 */
function cpuThreads(requested) {
  if (!canUseHelpers()) return 1;
  const cores = navigator.hardwareConcurrency || 1;
  return Math.max(1, Math.min(requested ?? cores, cores));
}

let compiled = null;

/** The compiled module, once per worker: this worker's instance and the CPU path's helpers
 * (see parts.js) share it. */
function compileModule() {
  const url = new URL("./sieve_web_bg.wasm", import.meta.url);
  compiled ??= WebAssembly.compileStreaming(fetch(url)).catch(async () => WebAssembly.compile(await (await fetch(url)).arrayBuffer()));
  return compiled;
}

/** A loaded model and the request runner. */
export class Backend {
  #model = null;

  /**
   * Loads `source`: a URL string, or the GGUF bytes as an ArrayBuffer (engine.js normalises),
   * on `device` ("auto", "webgpu" or "cpu").
   */
  async load(source, { cache = true, device = "auto", threads = null, context = 4096, onProgress = () => {} } = {}) {
    const chosen = await chooseDevice(device);
    await init({ module_or_path: await compileModule() });
    const bytes = typeof source === "string" ? await fetchModel(source, cache, onProgress) : new Uint8Array(source);
    onProgress({ stage: "weights", fraction: 0, device: chosen.device });
    const parts = chosen.device === "cpu" ? cpuThreads(threads) : 1;
    // Helper workers holding parts 1..parts of the model, on the same module.
    const helpers = parts > 1 ? await HelperPool.start({ module: await compileModule(), bytes, parts }) : undefined;
    try {
      this.#model = await Model.load(bytes, chosen.device, context, (fraction) => onProgress({ stage: "weights", fraction, device: chosen.device }), helpers);
    } catch (err) {
      helpers?.close();
      throw err;
    }
    onProgress({ stage: "ready", fraction: 1, device: chosen.device });
    return { ...this.#model.info, adapter: chosen.adapter };
  }

  /** Runs one request; `onDelta(text, forced)` streams, `isAborted()` is polled each step. */
  async generate(request, onDelta, isAborted) {
    if (!this.#model) throw new Error("no model is loaded");
    return this.#model.generate(request, (text, forced, toolCall) => {
      onDelta(text, forced, toolCall);
      return !isAborted();
    });
  }
}
