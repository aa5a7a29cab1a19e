// Shared by every kernel that reads a weight matrix `[N outputs, K inputs]`, which binds it as
// `w: array<vec4<u32>>` and prepends this. A matrix is in one of three forms ({{ weights }}, as
// `kernels::WeightForm` numbers them):
//
// 0. f32: `[K, N / 4]` vec4 (bits), input-major, so that the invocations owning adjacent column
//    quads read adjacent memory;
// 1. int8 (quantized files): runs of 16 inputs `scale * q + min` with `q` an i8, as
//    `gguf::int8_blocks` unpacks every block type. With C = K / 16 * N / 4 cells (a run of one
//    column quad): C scale vec4s, then C minimum vec4s, then 16 words a cell, word k holding
//    input k's q for the quad's four columns, a byte each: 1.5 bytes a weight;
// 2. nibbles (4-bit types): as 1 with `q` in 0..16, 8 words a cell, word k holding inputs 2k and
//    2k + 1 of the four columns, a byte each, the first in its low nibble: 1 byte a weight.
//
// Kernels walk a column quad's inputs a run of 16 at a time: `run_of` reads what a run shares
// (its scales and minimums), `weight_in` one input of it.

const FORM: u32 = {{ weights }}u;

struct Run {
    scale: vec4<f32>,
    minimum: vec4<f32>,
    // Index of the run's first word vec4.
    words: u32,
}

// Run `b` (inputs 16 b .. 16 b + 15) of column quad `col` of a matrix of `quads` column quads
// and `k_len` inputs.
fn run_of(b: u32, col: u32, quads: u32, k_len: u32) -> Run {
    var run: Run;
    if (FORM != 0u) {
        let cell = b * quads + col;
        let cells = (k_len / 16u) * quads;
        run.scale = bitcast<vec4<f32>>(w[cell]);
        run.minimum = bitcast<vec4<f32>>(w[cells + cell]);
        run.words = 2u * cells + cell * select(4u, 2u, FORM == 2u);
    }
    return run;
}

// Column quad `col` of input `i` (in `run`) of a matrix of `quads` column quads.
fn weight_in(run: Run, i: u32, col: u32, quads: u32) -> vec4<f32> {
    let k = i % 16u;
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
    return bitcast<vec4<f32>>(w[i * quads + col]);
}

// Column quad `col` of input `i`, on its own.
fn weight(i: u32, col: u32, quads: u32, k_len: u32) -> vec4<f32> {
    return weight_in(run_of(i / 16u, col, quads, k_len), i, col, quads);
}
