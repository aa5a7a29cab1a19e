// Runs the browser benchmark page (web/bench) in headless Chromium and prints its results as
// one JSON object (the page's `window.benchResults`).
//
//   node tests/e2e/bench.mjs [--pkg DIR] [--masks] [--decode] [--speed] [--query Q] [--no-isolation]
//
// `--pkg` serves another build of the package (scripts/build-web.sh OUT_DIR) as /web/pkg/, so a
// release build can be measured while web/pkg holds the tests' dev build. Without --masks,
// --decode or --speed, the first two run. `--query` is the page's query string (the speed
// comparison's engines, device and threads: see web/bench/bench.js); `--no-isolation` serves
// the page without the cross-origin isolation headers, as a site that does not send them.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { start } from "./browser.mjs";

const { values } = parseArgs({
  options: {
    pkg: { type: "string" },
    masks: { type: "boolean" },
    decode: { type: "boolean" },
    speed: { type: "boolean" },
    query: { type: "string", default: "" },
    "no-isolation": { type: "boolean" },
  },
});
const mounts = values.pkg ? { "/web/pkg/": resolve(values.pkg) } : {};
const wanted = ["masks", "decode", "speed"].filter((k) => values[k]);
const runs = wanted.length ? wanted : ["masks", "decode"];

const ctx = await start({ mounts, isolated: !values["no-isolation"] });
try {
  const { page, url, errors } = ctx;
  page.on("console", (m) => m.type() === "error" && console.error(`[page] ${m.text()}`));
  page.on("response", (r) => r.status() >= 400 && console.error(`[page] ${r.status()} ${r.url()}`));
  await page.goto(`${url}web/bench/${values.query ? `?${values.query}` : ""}`);
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
