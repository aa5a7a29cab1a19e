// The packed npm package as a user gets it: `npm pack web/pkg`, then the tarball installed into a
// fresh app folder with its own package.json (or npm would install into the nearest parent
// project, tests/e2e). Offline: the package has no dependencies.
import { execFileSync } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Empties `app` (a folder URL), packs web/pkg into it and installs the tarball there. */
export async function installTarball(app, name) {
  await rm(app, { recursive: true, force: true });
  await mkdir(app, { recursive: true });
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", fileURLToPath(app), `${ROOT}web/pkg`], { encoding: "utf8" });
  const [{ filename }] = JSON.parse(out);
  await writeFile(new URL("package.json", app), JSON.stringify({ name, private: true, type: "module" }));
  execFileSync("npm", ["install", "--no-save", "--no-package-lock", "--offline", `./${filename}`], { cwd: app, stdio: "ignore" });
  return filename;
}
