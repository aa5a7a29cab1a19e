// First half of an attention block for n rows: RMSNorm, the fused Q/K/V projection and its
// bias, RoPE on queries and keys (unless qk_norm_rope.wgsl does it after the heads' norms), then
// queries to `q` and keys and values into the layer's cache.
//
// x:      [n, D] f32, the residual stream.
// norm_w: [D] f32.
// w:      [C, D] weights (weights.wgsl), C = (H + 2 Hkv) hd: Q heads, then K heads, then V heads.
// cos, sin: [max_seq, hd / 2] f32, the rotary angles per position and pair.
// q:      [n, H hd / 4] vec4 out, rotated queries.
// k_cache, v_cache: [Hkv, max_seq, hd / 4] quads of f16 (two u32 words, pack2x16float); row
//         `start + r` of every head is written.
// params: [D, n, H, Hkv, hd, start, max_seq, bits of eps, rotate (1 or 0)].
// bias:   [C / 4] vec4, zeros for architectures without one.
//
// Column groups and slices as projection.wgsl says (RoPE pairs (2i, 2i + 1) never straddle a
// group: hd is a multiple of 4), reading the residual stream directly; the norms as norms.wgsl
// computes them. Dispatch ceil(C / 4 / (WG / SLICES)) x ceil(n / ROWS) workgroups.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> norm_w: array<f32>;
@group(0) @binding(2) var<storage, read_write> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> cos_table: array<f32>;
@group(0) @binding(4) var<storage, read_write> sin_table: array<f32>;
@group(0) @binding(5) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<vec2<u32>>;
@group(0) @binding(8) var<storage, read_write> params: array<u32>;
@group(0) @binding(9) var<storage, read_write> bias: array<vec4<f32>>;

// A quad as four f16 in two words.
fn halves(a: vec4<f32>) -> vec2<u32> {
    return vec2<u32>(pack2x16float(a.xy), pack2x16float(a.zw));
}

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let d = params[0];
    let n = params[1];
    let heads = params[2];
    let kv_heads = params[3];
    let hd = params[4];
    let start = params[5];
    let max_seq = params[6];
    let eps = bitcast<f32>(params[7]);
    let rotate = params[8] != 0u;
    let quads = (heads + 2u * kv_heads) * hd / 4u;
    let r0 = group.y * ROWS;
    let rows = min(ROWS, n - r0);
    let slice = lid / COLS;
    let col = group.x * COLS + lid % COLS;

    row_norms(lid, r0, rows, d, eps);

    var acc: array<vec4<f32>, ROWS>;
    if (col < quads) {
        // Each slice takes whole runs of RUN inputs (weights.wgsl).
        for (var b = slice; b * RUN < d; b += SLICES) {
            let run = run_of(b, col, quads, d);
            for (var i = b * RUN; i < min(b * RUN + RUN, d); i++) {
                let wv = weight_in(run, i, col, quads) * norm_w[i];
                for (var r = 0u; r < rows; r++) { acc[r] += x[(r0 + r) * d + i] * wv; }
            }
        }
    }
    acc = gather(lid, 0u, acc);
    if (slice != 0u || col >= quads) { return; }
    for (var r = 0u; r < rows; r++) { acc[r] *= inv_rms[r]; }

    let c = col * 4u;
    let q_width = heads * hd;
    let k_end = q_width + kv_heads * hd;
    let hq = hd / 4u;
    for (var r = 0u; r < ROWS; r++) {
        let row = r0 + r;
        if (row >= n) { break; }
        let pos = start + row;
        var a = acc[r] + bias[col];
        if (c < k_end && rotate) {
            let t = pos * (hd / 2u) + (c % hd) / 2u;
            let c0 = cos_table[t];
            let s0 = sin_table[t];
            let c1 = cos_table[t + 1u];
            let s1 = sin_table[t + 1u];
            a = vec4<f32>(a.x * c0 - a.y * s0, a.x * s0 + a.y * c0, a.z * c1 - a.w * s1, a.z * s1 + a.w * c1);
        }
        if (c < q_width) {
            q[row * (q_width / 4u) + col] = a;
        } else if (c < k_end) {
            let head = (c - q_width) / hd;
            k_cache[(head * max_seq + pos) * hq + (c - q_width) % hd / 4u] = halves(a);
        } else {
            let head = (c - k_end) / hd;
            v_cache[(head * max_seq + pos) * hq + (c - k_end) % hd / 4u] = halves(a);
        }
    }
}
