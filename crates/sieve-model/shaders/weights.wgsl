// Shared by every kernel that reads a weight matrix `[N outputs, K inputs]`, which binds it as
// `w: array<vec4<u32>>` and prepends this. A matrix is in one of four forms ({{ weights }}, as
// `kernels::WeightForm` numbers them):
//
// 0. f32: `[K, N / 4]` vec4 (bits), input-major, so that the invocations owning adjacent column
//    quads read adjacent memory;
// 1. quantized (quantized files): runs of RUN inputs `scale * u + minimum` with `u` unsigned of
//    BITS bits (4, 6 or 8), as `gguf::int8_blocks` unpacks every block type (RUN is 32 where
//    the file's blocks share a scale over 32 inputs, 16 for Q6_K's). With C = K / RUN * N / 4
//    cells (a run of one column quad): C scale vec4s, then where MINIMUM C minimum vec4s (else
//    the minimum is -2^(BITS - 1) scales), then BITS * RUN / 8 words a cell. For 8 bits, word
//    k holds input k's `u` for the quad's four columns, a byte each; for 4 and 6, word k holds
//    the low nibbles of inputs 2k and 2k + 1 of the four columns, a byte each, the first in its
//    low nibble, and for 6 bits word RUN / 2 + k the top two bits of inputs 4k .. 4k + 3, a
//    byte a column, two bits an input: BITS / 8 bytes a weight and 16 bytes a cell's scales
//    (32 with minimums);
// 2. f16 (F16 files): as 0 with each column quad in two words, two halves a word (the first in
//    the low half, as `unpack2x16float` reads them), two quads a vec4: 2 bytes a weight;
// 3. bf16 (BF16 files): as 2 with bfloat16 halves, the top half of an f32's bits.
//
// Kernels walk a column quad's inputs a run at a time: `run_of` reads what a run shares (its
// scales and minimums), `weight_in` one input of it.

const FORM: u32 = {{ weights }}u;
// Inputs of a run (16 for the float forms, which have none): a multiple of 16 dividing WG.
const RUN: u32 = {{ run }}u;
// Bits of a quantized value (0 for the float forms), and whether runs hold minimums.
const BITS: u32 = {{ bits }}u;
const MINIMUM: bool = {{ minimum }};
// Where runs hold no minimum, theirs is -ZERO scales (2^(BITS - 1); 1 for the float forms).
const ZERO: f32 = f32(1u << (max(BITS, 1u) - 1u));

struct Run {
    scale: vec4<f32>,
    minimum: vec4<f32>,
    // Index of the run's first word vec4.
    words: u32,
}

// Run `b` (inputs RUN b .. RUN b + RUN - 1) of column quad `col` of a matrix of `quads` column
// quads and `k_len` inputs.
fn run_of(b: u32, col: u32, quads: u32, k_len: u32) -> Run {
    var run: Run;
    if (FORM == 1u) {
        let cell = b * quads + col;
        let cells = (k_len / RUN) * quads;
        run.scale = bitcast<vec4<f32>>(w[cell]);
        run.minimum = -ZERO * run.scale;
        if (MINIMUM) { run.minimum = bitcast<vec4<f32>>(w[cells + cell]); }
        run.words = select(1u, 2u, MINIMUM) * cells + cell * (BITS * RUN / 32u);
    }
    return run;
}

// Column quad `col` of input `i` (in `run`) of a matrix of `quads` column quads.
fn weight_in(run: Run, i: u32, col: u32, quads: u32) -> vec4<f32> {
    if (FORM == 1u) {
        let k = i % RUN;
        if (BITS == 8u) {
            let word = w[run.words + k / 4u][k % 4u];
            let u = (vec4<u32>(word) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u);
            return run.scale * vec4<f32>(u) + run.minimum;
        }
        let word = w[run.words + k / 8u][(k % 8u) / 2u];
        let shift = 4u * (k % 2u);
        var u = (vec4<u32>(word) >> vec4<u32>(shift, 8u + shift, 16u + shift, 24u + shift)) & vec4<u32>(15u);
        if (BITS == 6u) {
            let top = w[run.words + RUN / 8u + k / 16u][(k % 16u) / 4u];
            let at = 2u * (k % 4u);
            u |= ((vec4<u32>(top) >> vec4<u32>(at, 8u + at, 16u + at, 24u + at)) & vec4<u32>(3u)) << vec4<u32>(4u);
        }
        return run.scale * vec4<f32>(u) + run.minimum;
    }
    if (FORM == 2u || FORM == 3u) {
        let quad = i * quads + col;
        let pair = w[quad / 2u];
        let odd = (quad & 1u) == 1u;
        let lo = select(pair.x, pair.z, odd);
        let hi = select(pair.y, pair.w, odd);
        if (FORM == 2u) {
            return vec4<f32>(unpack2x16float(lo), unpack2x16float(hi));
        }
        return bitcast<vec4<f32>>(vec4<u32>(lo << 16u, lo & 0xffff0000u, hi << 16u, hi & 0xffff0000u));
    }
    return bitcast<vec4<f32>>(w[i * quads + col]);
}

// Column quad `col` of input `i`, on its own.
fn weight(i: u32, col: u32, quads: u32, k_len: u32) -> vec4<f32> {
    return weight_in(run_of(i / RUN, col, quads, k_len), i, col, quads);
}
