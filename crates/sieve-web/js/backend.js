// The engine's working half: fetches (and caches) the model, loads it on WebGPU or on the CPU,
// and runs requests. It runs inside the Web Worker (worker.js) by default, or on the page itself.
import init, { ModelLoader } from "./sieve_web.js";
import { HelperPool, canUseHelpers } from "./parts.js";

const CACHE_NAME = "sieve-models-v1";

/** Bytes of a file in memory handed to the loaders at once, so that its progress is reported. */
const LOAD_PIECE = 4 << 20;

/** Times a broken download is taken up again where it stopped before the load fails. */
const RESUMES = 5;

/**
 * Reads the model from `response` (the first answer for `url`), handing its bytes to
 * `onChunk(chunk, total)` (awaited) in order and reporting `(loaded, total)` as they arrive. Where the connection
 * breaks off (or the body ends short of its `Content-Length`), the rest is asked for with a
 * `Range` header after a short wait, up to RESUMES times; a server that answers with the whole
 * file instead has its first bytes, taken already, skipped. An error from `onChunk` ends the
 * download.
 */
async function download(url, response, onChunk, report) {
  const total = Number(response.headers.get("Content-Length")) || 0;
  let loaded = 0;
  const take = async (chunk) => {
    await onChunk(chunk, total);
    loaded += chunk.length;
    report(loaded, total);
  };
  if (!response.body) return await take(new Uint8Array(await response.arrayBuffer()));
  let reader = response.body.getReader();
  // Bytes at the start of a body that were taken from an earlier one.
  let skip = 0;
  for (let resumes = 0; ; ) {
    let step;
    try {
      step = await reader.read();
      if (step.done && total && loaded < total) throw new Error(`the body ended at ${loaded} of ${total} bytes`);
    } catch (err) {
      if (resumes === RESUMES) throw new Error(`the model download from ${url} broke off at ${loaded} of ${total || "?"} bytes (tried ${RESUMES + 1} times): ${err?.message ?? err}`);
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** resumes++));
      let again = await fetch(url, { headers: { Range: `bytes=${loaded}-` } }).catch(() => null);
      const range = /^bytes (\d+)-/.exec(again?.headers.get("Content-Range") ?? "");
      if (again?.status === 206 && range && Number(range[1]) === loaded) skip = 0;
      else if (again?.status === 200) skip = loaded;
      else again = null;
      if (!again?.body) throw new Error(`the model download from ${url} broke off at ${loaded} bytes and could not be taken up again: ${again ? "no body" : err?.message ?? err}`);
      reader = again.body.getReader();
      continue;
    }
    if (step.done) return;
    const skipped = Math.min(skip, step.value.length);
    skip -= skipped;
    if (skipped === step.value.length) continue;
    try {
      await take(skipped ? step.value.subarray(skipped) : step.value);
    } catch (err) {
      reader.cancel().catch(() => {});
      throw err;
    }
  }
}

/**
 * A copy of the bytes passed to `add` for the Cache API, written as they come: `done()` stores
 * it under `url` once the file is whole, `fail()` stores nothing. Without the Cache API (or
 * when it refuses) it does nothing.
 */
function cacheWriter(cache, url, total) {
  if (!cache) return { add() {}, done: async () => {}, fail() {} };
  let controller;
  const body = new ReadableStream({ start: (c) => void (controller = c) });
  const headers = { "Content-Type": "application/octet-stream", ...(total ? { "Content-Length": String(total) } : {}) };
  const put = cache.put(url, new Response(body, { headers })).catch(() => {});
  let open = true;
  const attempt = (f) => {
    if (!open) return;
    try {
      f();
    } catch {
      open = false;
    }
  };
  return {
    add: (chunk) => attempt(() => controller.enqueue(chunk)),
    done: async () => {
      attempt(() => controller.close());
      await put;
    },
    fail: (err) => {
      attempt(() => controller.error(err));
      open = false;
    },
  };
}

/**
 * Reads the model from a URL, through the Cache API when it is available and `useCache`,
 * handing its bytes to `onChunk(chunk, total)` (awaited) in order as they arrive (`total`: the file's
 * length, 0 where unknown). A download goes into the cache as it arrives, and is kept once
 * whole.
 */
async function fetchModel(url, useCache, onChunk, onProgress) {
  let cache = null;
  if (useCache && typeof caches !== "undefined") {
    cache = await caches.open(CACHE_NAME).catch(() => null);
  }
  const cached = cache && (await cache.match(url).catch(() => undefined));
  const stage = cached ? "cache" : "download";
  const response = cached ?? (await fetch(url));
  if (!response.ok) throw new Error(`could not fetch the model from ${url}: HTTP ${response.status}`);
  const writer = cacheWriter(cached ? null : cache, url, Number(response.headers.get("Content-Length")) || 0);
  try {
    await download(url, response, (chunk, total) => {
      writer.add(chunk);
      return onChunk(chunk, total);
    }, (loaded, total) => onProgress({ stage, loaded, total, fraction: total ? loaded / total : null }));
  } catch (err) {
    writer.fail(err);
    throw err;
  }
  await writer.done();
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
   * on `device` ("auto", "webgpu" or "cpu"). The model is loaded as its bytes arrive, and the
   * file is never held whole: on WebGPU each part goes to the GPU as soon as it is whole; on the
   * CPU with helper workers (see parts.js) each worker keeps its own part of the rows alone.
   */
  async load(source, { cache = true, device = "auto", threads = null, context = 4096, onProgress = () => {} } = {}) {
    const chosen = await chooseDevice(device);
    const on = chosen.device;
    const wasm = await init({ module_or_path: await compileModule() });
    const parts = on === "cpu" ? cpuThreads(threads) : 1;
    const loader = await ModelLoader.start(on, context, parts);
    let helpers;
    try {
      helpers = parts > 1 ? await HelperPool.start({ module: await compileModule(), parts }) : undefined;
      // The helpers read each piece while this worker does.
      const push = async (chunk) => {
        const taken = helpers?.push(chunk);
        try {
          loader.push(chunk);
        } finally {
          await taken;
        }
      };
      if (typeof source === "string") {
        await fetchModel(source, cache, push, (progress) => onProgress({ ...progress, device: on }));
      } else {
        const bytes = new Uint8Array(source);
        for (let at = 0; at < bytes.length; at += LOAD_PIECE) {
          await push(bytes.subarray(at, at + LOAD_PIECE));
          onProgress({ stage: "weights", fraction: loader.fraction, device: on });
        }
      }
      await helpers?.ready();
    } catch (err) {
      loader.free();
      helpers?.close();
      throw err;
    }
    try {
      this.#model = loader.finish(helpers);
    } catch (err) {
      helpers?.close();
      throw err;
    }
    onProgress({ stage: "ready", fraction: 1, device: on });
    const info = this.#model.info;
    const weightBytes = info.weightBytes + (helpers?.weightBytes ?? 0);
    const memoryBytes = wasm.memory.buffer.byteLength + (helpers?.memoryBytes ?? 0);
    return { ...info, weightBytes, memoryBytes, adapter: chosen.adapter };
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
