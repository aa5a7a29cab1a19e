// The engine's Web Worker: the model and the decode loop run here so the page never freezes.
// Messages in: {id, op: "load", source, cache, device, threads, context} | {id, op: "generate", request} | {id, op: "abort"}.
// Messages out: {id, type: "progress" | "delta" | "done" | "error", ...}.
import { Backend } from "./backend.js";
import { sieveErrorFields } from "./errors.js";

const backend = new Backend();
const aborted = new Set();

function fail(id, err) {
  const fatal = err instanceof WebAssembly.RuntimeError;
  postMessage({ id, type: "error", message: String(err?.message ?? err), fatal, sieve: sieveErrorFields(err) });
}

self.onmessage = async ({ data }) => {
  const { id, op } = data;
  if (op === "abort") {
    aborted.add(id);
    return;
  }
  try {
    if (op === "load") {
      const info = await backend.load(data.source, {
        cache: data.cache,
        device: data.device,
        threads: data.threads,
        context: data.context,
        onProgress: (progress) => postMessage({ id, type: "progress", progress }),
      });
      postMessage({ id, type: "done", result: info });
    } else if (op === "generate") {
      const result = await backend.generate(
        data.request,
        (text, forced, toolCall) => postMessage({ id, type: "delta", text, forced, toolCall }),
        () => aborted.has(id),
      );
      postMessage({ id, type: "done", result });
    } else {
      throw new Error(`unknown operation ${op}`);
    }
  } catch (err) {
    fail(id, err);
  } finally {
    aborted.delete(id);
  }
};
