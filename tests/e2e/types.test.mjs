// The package's hand-written TypeScript types (web/pkg/index.d.ts) against code that uses the
// API as a TypeScript user would, under `tsc --strict`: what is right compiles, and each
// `@ts-expect-error` line, a misuse, must fail to compile (tsc reports an unused one).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const OUT = new URL("./out/types/", import.meta.url);
const PKG = fileURLToPath(new URL("../../web/pkg/index.js", import.meta.url));

const USER_CODE = `
import { createEngine, init, Vocabulary, Constraint, Matcher, SieveError } from ${JSON.stringify(PKG)};
import type { ChatMessage, EngineInfo, FunctionTool, JsonSchemaOptions, JumpForward, SieveErrorKind, ToolCall } from ${JSON.stringify(PKG)};

export async function lowLevel(tokenizerJson: string): Promise<number> {
  await init();
  const vocab: Vocabulary = Vocabulary.fromTokenizerJson(tokenizerJson);
  const options: JsonSchemaOptions = { whitespace: "compact", mode: "lenient", propertyOrder: 3 };
  const constraint = Constraint.jsonSchema({ type: "object" }, options);
  const warnings: string[] = constraint.warnings;
  const matcher = new Matcher(constraint, vocab);
  const mask = new Uint32Array(vocab.maskWords);
  matcher.fillNextTokenBitmask(mask);
  const jump: JumpForward = matcher.jumpForward((bytes) => (bytes.length ? [1] : null));
  const accepted: number = matcher.validateTokens(jump.tokens);
  // @ts-expect-error: the mode is "strict" or "lenient"
  Constraint.jsonSchema({}, { mode: "loose" });
  // @ts-expect-error: a regex is text
  Constraint.regex(/a+/);
  return accepted + warnings.length + jump.backoff;
}

export async function engine(): Promise<string | null> {
  const engine = await createEngine({ model: "model.gguf", device: "cpu", threads: 2 });
  const info: EngineInfo | null = engine.info;
  // @ts-expect-error: no such device
  await createEngine({ model: "model.gguf", device: "gpu" });
  try {
    const r = await engine.chat.completions.create({
      messages: [{ role: "user", content: "Hi" }],
      chat_template_kwargs: { enable_thinking: true },
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string" } } },
    });
    return r.choices[0].message.content + String(info?.threads);
  } catch (e) {
    if (e instanceof SieveError) {
      const kind: SieveErrorKind = e.kind;
      const tool: string | undefined = e.tool;
      const where: string = \`\${e.keyword ?? ""} \${e.pointer ?? ""} \${e.line ?? 0}:\${e.column ?? 0} \${e.offset ?? 0}\`;
      return kind + where;
    }
    return null;
  }
}

export async function tools(): Promise<string> {
  const engine = await createEngine({ model: "model.gguf" });
  const add: FunctionTool = { type: "function", function: { name: "add", parameters: { type: "object" } } };
  const r = await engine.chat.completions.create({
    messages: [{ role: "user", content: "2+3?" }],
    tools: [add],
    tool_choice: { type: "function", function: { name: "add" } },
    parallel_tool_calls: false,
  });
  const calls: ToolCall[] = r.choices[0].message.tool_calls ?? [];
  const history: ChatMessage[] = [
    { role: "assistant", content: null, tool_calls: calls },
    { role: "tool", tool_call_id: calls[0].id, content: "5" },
  ];
  // @ts-expect-error: a tool result names its call
  const orphan: ChatMessage = { role: "tool", content: "5" };
  // @ts-expect-error: no such tool_choice
  await engine.chat.completions.create({ messages: history, tools: [add], tool_choice: "sometimes" });
  const chunks = await engine.chat.completions.create({ messages: history, tools: [add], stream: true });
  let args = "";
  for await (const chunk of chunks) for (const t of chunk.choices[0].delta.tool_calls ?? []) args += t.function.arguments;
  await engine.chat.completions.create({
    messages: history,
    response_format: { type: "structural_tag", structures: [{ begin: "<a>", schema: { type: "string" }, end: "</a>" }], triggers: ["<a"] },
  });
  return r.choices[0].finish_reason + args + String(orphan);
}
`;

test("the package's types accept the API's uses and reject its misuses (tsc --strict)", async () => {
  await mkdir(OUT, { recursive: true });
  await writeFile(new URL("user.ts", OUT), USER_CODE);
  const tsc = fileURLToPath(new URL("./node_modules/typescript/bin/tsc", import.meta.url));
  const args = ["--noEmit", "--strict", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler", "--lib", "es2022,dom,esnext.disposable", "--skipLibCheck", "false", fileURLToPath(new URL("user.ts", OUT))];
  const run = await promisify(execFile)(process.execPath, [tsc, ...args]).then(
    () => ({ ok: true, out: "" }),
    (err) => ({ ok: false, out: `${err.stdout}${err.stderr}` }),
  );
  assert.ok(run.ok, run.out);
});
