// Types of the sieve-web package: the engine (engine.js) and the low-level API (sieve_web.js).
export { default as init, initGpu } from "./sieve_web.js";

// The low-level API (the wasm module's classes), typed by hand. Free a matcher or constraint
// with `free()` (or `using`) when done with it; constraints are shared by their matchers.

/** A tokenizer's vocabulary as token bytes, for masks over its ids. */
export class Vocabulary {
  private constructor();
  /** Reads a Hugging Face `tokenizer.json` text (byte-level BPE or SentencePiece style).
   * `eosTokens` replaces the end-of-sequence ids found in it; `width` is the logits width when
   * it is larger than the vocabulary (padding ids are never allowed). */
  static fromTokenizerJson(text: string, eosTokens?: Uint32Array | number[] | null, width?: number | null): Vocabulary;
  /** Number of token ids. */
  readonly size: number;
  /** Width of a logits row (at least `size`). */
  readonly width: number;
  /** Words of a bitmask: `ceil(width / 32)`. */
  readonly maskWords: number;
  /** The end-of-sequence ids. */
  readonly eosTokens: Uint32Array;
  /** The bytes of one token (empty for an unknown id). */
  tokenBytes(id: number): Uint8Array;
  /** Computes masks along sample documents so the browser optimises the mask code before the
   * first request; returns how many it computed. */
  warmUp(): number;
  free(): void;
  [Symbol.dispose](): void;
}

/** Options of `Constraint.jsonSchema`. */
export interface JsonSchemaOptions {
  /** Whitespace between tokens: `"any"` (default), `"compact"` (none), or at most this many. */
  whitespace?: "any" | "compact" | number;
  /** `"strict"` (default): a keyword that cannot be enforced exactly is a `SieveError`;
   * `"lenient"`: it is left out and reported in `warnings`. */
  mode?: "strict" | "lenient";
  /** The value of a missing `additionalProperties` (default true, as the specification says). */
  additionalProperties?: boolean;
  /** `"schema"` (default): properties in the schema's order; a number n: any order for objects
   * of at most n properties. */
  propertyOrder?: "schema" | number;
}

/** A compiled constraint: immutable, shared by every matcher that follows it. Each constructor
 * throws a `SieveError` when the source does not compile. */
export class Constraint {
  private constructor();
  /** A JSON Schema, as an object or its JSON text. */
  static jsonSchema(schema: object | boolean | string, options?: JsonSchemaOptions | null): Constraint;
  /** A regex the whole output must match (regex-automata syntax, Unicode aware). */
  static regex(pattern: string): Constraint;
  /** A GBNF grammar (llama.cpp syntax) whose start rule is `root`. */
  static grammar(gbnf: string): Constraint;
  /** The output is exactly one of these strings. */
  static choices(choices: string[]): Constraint;
  /** Any JSON value. */
  static anyJson(): Constraint;
  /** Free text in which a trigger starts a tagged section (tool calls), as the `structural_tag`
   * response format takes it; schemas translated with `options`. */
  static structuralTag(tag: Omit<StructuralTagFormat, "type"> & { type?: "structural_tag" }, options?: JsonSchemaOptions | null): Constraint;
  /** Keywords a lenient JSON Schema left out, as messages. */
  readonly warnings: string[];
  /** Whether `text` as a whole satisfies the constraint. */
  matches(text: string): boolean;
  free(): void;
  [Symbol.dispose](): void;
}

/** What a matcher's constraint forces next (see `Matcher.jumpForward`). */
export interface JumpForward {
  /** The forced text. */
  text: string;
  /** Tokens to roll back before accepting `tokens` (the forced text retokenized with the end of
   * the output so far). */
  backoff: number;
  /** The canonical tokens of the forced text (empty without a `tokenize` function). */
  tokens: number[];
}

/** Follows one sequence through a constraint over a vocabulary. Every method that fails
 * throws and leaves the matcher as it was. */
export class Matcher {
  /** A matcher at the start of `constraint`. */
  constructor(constraint: Constraint, vocabulary: Vocabulary);
  /** Writes the allowed next tokens into the first `vocabulary.maskWords` words of `mask`
   * (bit `i % 32` of word `i / 32` for token `i`). */
  fillNextTokenBitmask(mask: Uint32Array): void;
  /** Advances past `token`; a token the mask forbids is an error and changes nothing. */
  acceptToken(token: number): void;
  /** Advances past raw text (for forced continuations taken as bytes). */
  acceptText(text: string): void;
  /** How many of `tokens` (a speculative draft) are acceptable in a row; the state is unchanged. */
  validateTokens(tokens: Uint32Array | number[]): number;
  /** Forgets the last `n` accepted tokens. */
  rollback(n: number): void;
  /** The forced continuation. `tokenize(bytes)` returns the canonical token ids of the bytes (or
   * null); without it `tokens` is empty and only `text` is known. */
  jumpForward(tokenize?: ((bytes: Uint8Array) => number[] | Uint32Array | null) | null): JumpForward;
  /** Whether the output so far is complete. */
  isAccepting(): boolean;
  /** Whether the output is complete and nothing more is allowed. */
  isTerminated(): boolean;
  /** An independent copy at the same position. */
  fork(): Matcher;
  /** Back to the start. */
  reset(): void;
  free(): void;
  [Symbol.dispose](): void;
}

/** Where the model runs: `auto` (the default) takes WebGPU when the browser's adapter is a real
 * GPU, and the CPU when it is a software one (SwiftShader) or there is none. */
export type DeviceChoice = "auto" | "webgpu" | "cpu";

/** The class of a compile failure. */
export type SieveErrorKind =
  | "regex"
  | "syntax"
  | "undefined_rule"
  | "duplicate_rule"
  | "no_root"
  | "empty"
  | "limit"
  | "unsupported"
  | "schema"
  | "structural_tag"
  | "tool";

/**
 * What a constraint that does not compile rejects with (`Constraint.jsonSchema`, `.regex`,
 * `.grammar`, `.choices`, and a request's `response_format` or `tools`): its kind, and where
 * they apply the keyword and JSON pointer of a JSON Schema error, or the byte offset, line and
 * column of a regex or grammar error (or of schema text that is not JSON), and the tool whose
 * definition is wrong (kind `tool`, or its schema error's kind).
 */
export class SieveError extends Error {
  constructor(message: string, fields?: Partial<Pick<SieveError, "kind" | "tool" | "keyword" | "pointer" | "offset" | "line" | "column">>);
  name: "SieveError";
  kind: SieveErrorKind;
  /** The tool of `tools` (or the name in `tool_choice`) at fault. */
  tool?: string;
  /** The schema keyword at fault (empty for the schema as a whole). */
  keyword?: string;
  /** The JSON pointer of the schema holding it. */
  pointer?: string;
  /** Byte offset into the regex or grammar text. */
  offset?: number;
  /** 1-based line and column of `offset` (or in schema text that is not JSON). */
  line?: number;
  column?: number;
}

/** Where loading the model stands. */
export interface LoadProgress {
  /** `download` (from the network), `cache` (from the Cache API), `weights` (dequantizing and
   * uploading to the GPU, or reading them for the CPU), `ready`. A model loaded by URL on WebGPU
   * goes to the GPU a part at a time as its bytes arrive, during the `download` or `cache`
   * stage, with no `weights` stage of its own. */
  stage: "download" | "cache" | "weights" | "ready";
  /** Where the model is being loaded (weights and ready stages; on WebGPU, every stage). */
  device?: "webgpu" | "cpu";
  /** 0 to 1, or null when the size is unknown. */
  fraction: number | null;
  /** Bytes read so far (download and cache stages). */
  loaded?: number;
  /** Bytes in all (download and cache stages; 0 when the server does not say). */
  total?: number;
}

export interface EngineOptions {
  /** The GGUF model (for example SmolLM2-135M-Instruct Q4_1): a URL, or its bytes. A download
   * that breaks off is taken up where it stopped (`Range` requests, up to five times). */
  model: string | URL | ArrayBuffer | Uint8Array;
  /** Where the model runs (default `auto`). */
  device?: DeviceChoice;
  /** Threads of the CPU path (default: every core the browser reports). More than one needs a
   * cross-origin isolated page (SharedArrayBuffer) and the engine in its Web Worker; each
   * extra thread is a helper worker holding a part of the weights. Ignored on WebGPU. */
  threads?: number;
  /** Tokens the context holds (prompt and output; default 4,096, the model's maximum when that
   * is smaller): the keys and values of that many positions are allocated at load. */
  context?: number;
  /** Called while the model downloads and while its weights load. */
  onProgress?: (progress: LoadProgress) => void;
  /** Run the model in a Web Worker (default true) so the page never freezes. */
  worker?: boolean;
  /** Keep downloaded model bytes in the Cache API (default true): written as they arrive,
   * kept once the file is whole. */
  cache?: boolean;
}

export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name?: string; schema: object | boolean; strict?: boolean } }
  | { type: "regex"; pattern: string }
  | { type: "grammar"; grammar: string }
  | StructuralTagFormat;

/** Free text in which a trigger starts a tagged section: `begin`, a JSON value of `schema` or a
 * string of the GBNF `grammar`, `end`, then text again. Each `begin` starts with a trigger. */
export interface StructuralTagFormat {
  type: "structural_tag";
  structures: ({ begin: string; end: string } & ({ schema: object | boolean } | { grammar: string }))[];
  triggers: string[];
  /** The output starts with a section (default false). */
  at_least_one?: boolean;
  /** The output ends after the first section (default false). */
  stop_after_first?: boolean;
}

/** A function the model may call; its `arguments` are always valid for `parameters` (strict
 * unless `strict` is false, as for `json_schema`). */
export interface FunctionTool {
  type: "function";
  function: { name: string; description?: string; parameters?: object; strict?: boolean };
}

/** `auto` (default): text or calls; `required`: calls first, at least one; `none`: text only;
 * or one call of the named function. */
export type ToolChoice = "auto" | "required" | "none" | { type: "function"; function: { name: string } };

/** A call the model made. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A chat request's messages and how the model's chat template renders them. */
export interface ChatOptions {
  messages: ChatMessage[];
  /** Further variables for the model's chat template, as vLLM takes them; `enable_thinking`
   * (for thinking models) is false unless set here. */
  chat_template_kwargs?: Record<string, unknown>;
  /** Functions the model may call, in the model family's own call format (or a generic one,
   * described to the model, where its template has none); not with a `response_format`. */
  tools?: FunctionTool[];
  tool_choice?: ToolChoice;
  /** More than one call in a reply (default true). */
  parallel_tool_calls?: boolean;
}

export interface SamplingOptions {
  response_format?: ResponseFormat;
  /** Most completion tokens (default 256). */
  max_tokens?: number;
  /** 0 (default) is greedy. */
  temperature?: number;
  top_p?: number;
  top_k?: number;
  /** The same seed gives the same output. */
  seed?: number;
  /** Prefill text the constraint forces in one pass instead of sampling it (default true). */
  jump_forward?: boolean;
  /** Stream chunks instead of returning one completion. */
  stream?: boolean;
  /** Stops the generation; the request rejects with an AbortError and the engine stays usable. */
  signal?: AbortSignal;
}

export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export type FinishReason = "stop" | "length" | "tool_calls";

export interface Timings {
  /** Time to translate and compile the output constraint (a cached one takes none). A new
   * constraint compiles while the prompt prefills on the GPU. */
  compile_ms: number;
  /** Time to the first output text (forced text included). */
  ttft_ms: number | null;
  total_ms: number;
  decode_ms: number;
  forward_passes: number;
  /** GPU kernel launches of one forward pass (a prompt prefill or one decode step); choosing a
   * token adds one launch per step. */
  launches_per_pass: number | null;
  tokens_per_s: number;
  mask_us_p50: number;
  mask_us_p99: number;
  /** Time spent in the constraint: its masks, advancing it by each token, jump-forward's forced
   * text (not its compile, `compile_ms`). Free text spends some too, in its own masks. */
  constraint_ms: number;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Completion tokens forced by the constraint (jump-forward) rather than sampled. */
  forced_tokens: number;
  timings: Timings;
  /** Keywords a non-strict JSON Schema left out. */
  warnings?: string[];
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: { index: 0; message: { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }; finish_reason: FinishReason }[];
  usage: Usage;
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: { index: 0; delta: { role?: "assistant"; content?: string; tool_calls?: ToolCallDelta[] }; finish_reason: FinishReason | null }[];
  /** On the last chunk. */
  usage?: Usage;
  /** Whether this chunk's text was forced by the constraint. */
  sieve?: { forced: boolean };
}

/** A piece of call `index`: its first has `id`, `type` and the name, the others more of the
 * arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: "function";
  function: { name?: string; arguments: string };
}

export interface Completion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: { index: 0; text: string; finish_reason: FinishReason | null }[];
  usage?: Usage;
  sieve?: { forced: boolean };
}

/** The loaded model and where it runs. */
export interface EngineInfo {
  /** The model file's name (`general.name`), or its architecture's. */
  name: string;
  /** The GGUF architecture: "llama", "qwen2", "qwen3", "phi3" or "gemma3". */
  architecture: string;
  vocab: number;
  layers: number;
  hidden: number;
  maxContext: number;
  /** Where the model runs: the choice `auto` made, or the one asked for. */
  device: "webgpu" | "cpu";
  /** CPU threads on the CPU (the engine's worker and its helpers), null on WebGPU. */
  threads: number | null;
  /** Memory the weights take where they run, in bytes (on the CPU, the helpers' parts too). */
  weightBytes: number;
  /**
   * Bytes of WebAssembly memory the engine's worker and its CPU helpers hold: the most each
   * needed so far (a module's memory never shrinks), the weights on the CPU included.
   */
  memoryBytes: number;
  /** The browser's WebGPU adapter (vendor, architecture, description), null without one. */
  adapter: string | null;
}

export interface Engine {
  readonly info: EngineInfo | null;
  chat: {
    completions: {
      create(body: SamplingOptions & ChatOptions & { stream?: false }): Promise<ChatCompletion>;
      create(body: SamplingOptions & ChatOptions & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
    };
  };
  completions: {
    create(body: SamplingOptions & { prompt: string; stream?: false }): Promise<Completion>;
    create(body: SamplingOptions & { prompt: string; stream: true }): Promise<AsyncIterable<Completion>>;
  };
  /** Stops the worker and frees the model. */
  unload(): void;
}

/** Loads the model and returns the engine. Rejects when `device` is `webgpu` and WebGPU is
 * unavailable, or when the model cannot be fetched or read. */
export function createEngine(options: EngineOptions): Promise<Engine>;
