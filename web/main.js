// The demo page: loads sieve's wasm package and brings up WebGPU.
import init, { initGpu } from "./pkg/sieve_web.js";

const status = document.getElementById("gpu-status");

function show(state, text) {
  status.dataset.state = state;
  status.textContent = text;
}

try {
  await init();
  await initGpu();
  show("ready", "WebGPU ready.");
} catch (err) {
  show("error", String(err?.message ?? err));
}
