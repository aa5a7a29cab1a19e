// Shared by every kernel that reads a weight matrix `[N outputs, K inputs]`, which binds it as
// `w: array<vec4<u32>>` and prepends this. A matrix is in one of five forms ({{ weights }}, as
// `kernels::WeightForm` numbers them):
//
// 0. f32: `[K, N / 4]` vec4 (bits), input-major, so that the invocations owning adjacent column
//    quads read adjacent memory;
// 1. int8 (quantized files): runs of RUN inputs `scale * q + min` with `q` an i8, as
//    `gguf::int8_blocks` unpacks every block type (RUN is 32 where the file's blocks share a
//    scale over 32 inputs, 16 for Q6_K's). With C = K / RUN * N / 4 cells (a run of one column
//    quad): C scale vec4s, then C minimum vec4s, then RUN words a cell, word k holding input k's
//    q for the quad's four columns, a byte each: 1.25 bytes a weight (1.5 with runs of 16);
// 2. nibbles (4-bit types): as 1 with `q` in 0..16, RUN / 2 words a cell, word k holding inputs
//    2k and 2k + 1 of the four columns, a byte each, the first in its low nibble: 0.75 bytes a
//    weight (1 with runs of 16);
// 3. f16 (F16 files): as 0 with each column quad in two words, two halves a word (the first in
//    the low half, as `unpack2x16float` reads them), two quads a vec4: 2 bytes a weight;
// 4. bf16 (BF16 files): as 3 with bfloat16 halves, the top half of an f32's bits.
//
// Kernels walk a column quad's inputs a run at a time: `run_of` reads what a run shares (its
// scales and minimums), `weight_in` one input of it.

const FORM: u32 = {{ weights }}u;
// Inputs of a run (16 for the float forms, which have none): a multiple of 16 dividing WG.
const RUN: u32 = {{ run }}u;

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
    if (FORM == 1u || FORM == 2u) {
        let cell = b * quads + col;
        let cells = (k_len / RUN) * quads;
        run.scale = bitcast<vec4<f32>>(w[cell]);
        run.minimum = bitcast<vec4<f32>>(w[cells + cell]);
        run.words = 2u * cells + cell * select(RUN / 4u, RUN / 8u, FORM == 2u);
    }
    return run;
}

// Column quad `col` of input `i` (in `run`) of a matrix of `quads` column quads.
fn weight_in(run: Run, i: u32, col: u32, quads: u32) -> vec4<f32> {
    let k = i % RUN;
    if (FORM == 1u) {
        let word = w[run.words + k / 4u][k % 4u];
        let q = bitcast<vec4<i32>>(vec4<u32>(word << 24u, word << 16u, word << 8u, word)) >> vec4<u32>(24u);
        return run.scale * vec4<f32>(q) + run.minimum;
    }
    if (FORM == 2u) {
        let word = w[run.words + k / 8u][(k % 8u) / 2u];
        let shift = 4u * (k % 2u);
        let q = (vec4<u32>(word) >> vec4<u32>(shift, 8u + shift, 16u + shift, 24u + shift)) & vec4<u32>(15u);
        return run.scale * vec4<f32>(q) + run.minimum;
    }
    if (FORM == 3u || FORM == 4u) {
        let quad = i * quads + col;
        let pair = w[quad / 2u];
        let lo = pair[2u * (quad % 2u)];
        let hi = pair[2u * (quad % 2u) + 1u];
        if (FORM == 3u) {
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
