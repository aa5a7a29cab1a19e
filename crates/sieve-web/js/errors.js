// The error a constraint that does not compile rejects with, from the low-level API and from
// the engine alike: its `kind`, and where they apply the `keyword` and JSON `pointer` of a JSON
// Schema error or the byte `offset`, `line` and `column` of a regex or grammar error, and the
// `tool` of a request's bad tool definition. The wasm
// module makes them as Errors named "SieveError" (crate::error), which `instanceof` recognises;
// the engine's worker sends the fields across and they are made again here.

/** The fields a SieveError carries besides its message. */
export const SIEVE_ERROR_FIELDS = ["kind", "tool", "keyword", "pointer", "offset", "line", "column"];

export class SieveError extends Error {
  constructor(message, fields = {}) {
    super(message);
    this.name = "SieveError";
    for (const key of SIEVE_ERROR_FIELDS) if (fields[key] !== undefined) this[key] = fields[key];
  }

  /** True for this class's errors and for the Errors the wasm module names "SieveError". */
  static [Symbol.hasInstance](value) {
    return value instanceof Error && value.name === "SieveError";
  }
}

/** A SieveError's fields, to post across a worker boundary (null for other errors). */
export function sieveErrorFields(err) {
  if (!(err instanceof SieveError)) return null;
  return Object.fromEntries(SIEVE_ERROR_FIELDS.filter((key) => err[key] !== undefined).map((key) => [key, err[key]]));
}
