// Launches Debian's Chromium headless with WebGPU on SwiftShader, and serves the repository
// on localhost, for the end-to-end tests. Nothing here downloads a browser.
import { chromium } from "playwright-core";
import { serve } from "../../web/serve.mjs";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

const ARGS = [
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--use-webgpu-adapter=swiftshader",
  "--enable-features=Vulkan",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
];

/** Starts the server and the browser; `close()` stops both. Page errors are collected.
 * `mounts`, `isolated`, `breaks` and `rangeless` are passed to the server, whose `log` of
 * requests is returned (see web/serve.mjs). */
export async function start({ mounts, isolated, breaks, rangeless } = {}) {
  const server = await serve({ port: 0, mounts, isolated, breaks, rangeless });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (err) => errors.push(String(err)));
  return {
    url: server.url,
    log: server.log,
    page,
    errors,
    async close() {
      await browser.close();
      server.close();
    },
  };
}
