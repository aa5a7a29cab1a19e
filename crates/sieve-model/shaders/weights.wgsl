// Shared by every kernel that reads a weight matrix `[N outputs, K inputs]`, which binds it as
// `w: array<vec4<u32>>` and prepends this. A matrix is in one of two forms ({{ blocked }}):
//
// - f32: `[K, N / 4]` vec4 (bits), input-major, so that the invocations owning adjacent column
//   quads read adjacent memory;
// - blocked (quantized files): runs of 16 inputs `scale * q + min` with `q` an i8, as
//   `gguf::int8_blocks` unpacks every block type. With C = K / 16 * N / 4 cells (a run of one
//   column quad): C scale vec4s, then C minimum vec4s, then C * 16 words, word k of a cell
//   holding input k's q for the quad's four columns, a byte each: 1.5 bytes a weight.

const BLOCKED: bool = {{ blocked }};

// Column quad `col` of input `i` of a matrix of `quads` column quads and `k_len` inputs.
fn weight(i: u32, col: u32, quads: u32, k_len: u32) -> vec4<f32> {
    if (BLOCKED) {
        let cell = (i / 16u) * quads + col;
        let cells = (k_len / 16u) * quads;
        let k = i % 16u;
        let word = w[2u * cells + cell * 4u + k / 4u][k % 4u];
        let q = bitcast<vec4<i32>>(vec4<u32>(word << 24u, word << 16u, word << 8u, word)) >> vec4<u32>(24u);
        return bitcast<vec4<f32>>(w[cell]) * vec4<f32>(q) + bitcast<vec4<f32>>(w[cells + cell]);
    }
    return bitcast<vec4<f32>>(w[i * quads + col]);
}
