// Runs the browser benchmark page (web/bench) in headless Chromium and prints its results as
// one JSON object (the page's `window.benchResults`).
//
//   node tests/e2e/bench.mjs [--pkg DIR] [--masks] [--decode]
//
// `--pkg` serves another build of the package (scripts/build-web.sh OUT_DIR) as /web/pkg/, so a
// release build can be measured while web/pkg holds the tests' dev build. Without --masks or
// --decode both run.
import { resolve } from "node:path";
import { start } from "./browser.mjs";

const args = process.argv.slice(2);
const at = args.indexOf("--pkg");
const mounts = at >= 0 ? { "/web/pkg/": resolve(args[at + 1]) } : {};
const wanted = ["masks", "decode"].filter((k) => args.includes(`--${k}`));
const runs = wanted.length ? wanted : ["masks", "decode"];

const ctx = await start({ mounts });
try {
  const { page, url, errors } = ctx;
  page.on("console", (m) => m.type() === "error" && console.error(`[page] ${m.text()}`));
  page.on("response", (r) => r.status() >= 400 && console.error(`[page] ${r.status()} ${r.url()}`));
  await page.goto(`${url}web/bench/`);
  for (const run of runs) {
    await page.click(`#run-${run}`);
    await page.waitForFunction(() => document.body.dataset.state !== "running", null, { timeout: 0, polling: 1000 });
    const state = await page.evaluate(() => document.body.dataset.state);
    if (state !== "done") {
      throw new Error(`${run}: ${await page.textContent("#status")} ${errors.join("; ")}`);
    }
  }
  console.log(JSON.stringify(await page.evaluate(() => window.benchResults), null, 2));
} finally {
  await ctx.close();
}
