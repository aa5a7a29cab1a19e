// The engine's working half: fetches (and caches) the model, loads it on WebGPU, and runs
// requests. It runs inside the Web Worker (worker.js) by default, or on the page itself.
import init, { Model } from "./sieve_web.js";

const CACHE_NAME = "sieve-models-v1";

/** Reads a Response body, reporting `{loaded, total}` as chunks arrive. */
async function readWithProgress(response, report) {
  const total = Number(response.headers.get("Content-Length")) || 0;
  if (!response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    report(loaded, total);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
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
  const bytes = await readWithProgress(response, (loaded, total) =>
    onProgress({ stage, loaded, total, fraction: total ? loaded / total : null }),
  );
  if (cache && !cached) {
    await cache.put(url, new Response(bytes, { headers: { "Content-Type": "application/octet-stream" } })).catch(() => {});
  }
  return bytes;
}

/** A loaded model and the request runner. */
export class Backend {
  #model = null;

  /** Loads `source`: a URL string, or the GGUF bytes as an ArrayBuffer (engine.js normalises). */
  async load(source, { cache = true, onProgress = () => {} } = {}) {
    if (typeof navigator === "undefined" || !navigator.gpu) {
      throw new Error("WebGPU is not available in this browser (navigator.gpu is missing); sieve needs it to run the model");
    }
    await init();
    const bytes = typeof source === "string" ? await fetchModel(source, cache, onProgress) : new Uint8Array(source);
    onProgress({ stage: "weights", fraction: 0 });
    this.#model = await Model.load(bytes, (fraction) => onProgress({ stage: "weights", fraction }));
    onProgress({ stage: "ready", fraction: 1 });
    return this.#model.info;
  }

  /** Runs one request; `onDelta(text, forced)` streams, `isAborted()` is polled each step. */
  async generate(request, onDelta, isAborted) {
    if (!this.#model) throw new Error("no model is loaded");
    return this.#model.generate(request, (text, forced) => {
      onDelta(text, forced);
      return !isAborted();
    });
  }
}
