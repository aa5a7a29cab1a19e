// The demo page in a real headless Chromium: it loads the wasm package and brings up WebGPU.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { start } from "./browser.mjs";

let ctx;
before(async () => {
  ctx = await start();
});
after(async () => {
  await ctx?.close();
});

test("the demo page loads sieve and gets a WebGPU device", async () => {
  const { page, url, errors } = ctx;
  await page.goto(url);
  const status = page.locator("#gpu-status");
  await page.waitForFunction(() => document.getElementById("gpu-status")?.dataset.state !== "pending", null, { timeout: 120_000 });
  const state = await status.getAttribute("data-state");
  const text = await status.textContent();
  assert.equal(state, "ready", `WebGPU did not come up: ${text}`);
  assert.deepEqual(errors, []);
  await mkdir(new URL("./out/", import.meta.url), { recursive: true });
  await page.screenshot({ path: new URL("./out/demo.png", import.meta.url).pathname, fullPage: true });
});
