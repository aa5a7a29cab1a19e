// A small static file server for the demo and the browser tests: serves the repository root
// on localhost with the MIME types a module page and its wasm need.
//
//   node web/serve.mjs [--port N]     (default 8080; the next free port is taken if it is busy)
//
// Also importable: `const { url, close } = await serve({ port: 0 })`; `mounts` maps a URL prefix
// to another folder (`{ "/web/pkg/": "/tmp/pkg-release" }`), to serve a second build of the package;
// `isolated: false` leaves out the cross-origin isolation headers (no SharedArrayBuffer, so no
// threads in the page), as on a site that does not send them. Single byte ranges (`Range:
// bytes=A-` or `A-B`) are served as a model host serves them. For the browser tests, `breaks`
// maps a URL path to a byte count: the first whole response for that path closes its connection
// after that many bytes, as a dropped download does; `rangeless` lists URL prefixes whose
// requests get the whole file whatever their `Range`, as some hosts answer; `log` (returned)
// lists each request's path, range and status.
import { createServer } from "node:http";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ts": "text/plain; charset=utf-8",
};

async function handle(req, res, { mounts, isolated, breaks, rangeless, log }) {
  let path = decodeURIComponent(new URL(req.url, "http://localhost").pathname);
  const asked = path;
  let root = ROOT;
  const prefix = Object.keys(mounts).find((p) => path.startsWith(p));
  if (prefix) {
    root = resolve(mounts[prefix]);
    path = path.slice(prefix.length);
  }
  let file = normalize(join(root, path));
  if (file !== root && !file.startsWith(root + sep)) {
    res.writeHead(403).end("forbidden");
    return;
  }
  try {
    let info = await stat(file);
    if (info.isDirectory()) {
      file = join(file, "index.html");
      info = await stat(file);
    }
    const range = rangeless.some((p) => asked.startsWith(p)) ? null : /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const first = range ? Number(range[1]) : 0;
    const last = range && range[2] ? Math.min(Number(range[2]), info.size - 1) : info.size - 1;
    if (range && first > last) {
      log.push({ path: asked, range: req.headers.range, status: 416 });
      res.writeHead(416, { "Content-Range": `bytes */${info.size}` }).end();
      return;
    }
    const status = range ? 206 : 200;
    log.push({ path: asked, range: req.headers.range ?? null, status });
    res.writeHead(status, {
      "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
      "Content-Length": last - first + 1,
      "Accept-Ranges": "bytes",
      ...(range && { "Content-Range": `bytes ${first}-${last}/${info.size}` }),
      "Cache-Control": "no-cache",
      // Cross-origin isolation: SharedArrayBuffer for threads, and performance.now() at 5 µs
      // instead of 100 µs, for the benchmarks.
      ...(isolated && { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" }),
    });
    const cut = range ? undefined : breaks[asked];
    if (cut === undefined) {
      createReadStream(file, { start: first, end: last }).pipe(res);
      return;
    }
    delete breaks[asked];
    res.flushHeaders();
    createReadStream(file, { start: 0, end: cut - 1 })
      .on("data", (chunk) => res.write(chunk))
      .on("end", () => res.destroy());
  } catch {
    res.writeHead(404, { "Content-Type": "text/plain" }).end(`not found: ${path}`);
  }
}

/** Starts the server; resolves to its URL and a close function. Port 0 picks any free port. */
export function serve({ port = 8080, host = "127.0.0.1", tries = 20, mounts = {}, isolated = true, breaks = {}, rangeless = [] } = {}) {
  return new Promise((resolvePromise, reject) => {
    const log = [];
    const pending = { ...breaks };
    const server = createServer((req, res) => {
      handle(req, res, { mounts, isolated, breaks: pending, rangeless, log }).catch((err) => res.writeHead(500).end(String(err)));
    });
    server.once("error", (err) => {
      if (err.code === "EADDRINUSE" && port !== 0 && tries > 1) {
        serve({ port: port + 1, host, tries: tries - 1, mounts, isolated, breaks, rangeless }).then(resolvePromise, reject);
      } else {
        reject(err);
      }
    });
    server.listen(port, host, () => {
      const { port: bound } = server.address();
      resolvePromise({ url: `http://${host === "127.0.0.1" ? "localhost" : host}:${bound}/`, log, close: () => server.close() });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf("--port");
  const port = at > 0 ? Number(process.argv[at + 1]) : Number(process.env.PORT ?? 8080);
  const { url } = await serve({ port });
  console.log(`sieve demo: ${url}`);
  console.log("(Ctrl-C to stop)");
}
