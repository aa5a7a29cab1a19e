// Causal grouped-query attention of n new rows against a layer's cache.
//
// q:       [n, H hd / 4] vec4, rotated queries (row r sits at position start + r).
// k_cache, v_cache: [Hkv, max_seq, hd / 4] vec4; positions 0 ..= start + r are valid for row r.
// out:     [n, H hd / 4] vec4.
// params:  [n, H, Hkv, hd, start, max_seq, bits of the score scale].
//
// One invocation per (row, head) walks the keys once with a running maximum and sum (online
// softmax), so no workgroup memory or barrier is needed (barriers cost far more than the
// arithmetic on a software adapter) and any context length works. hd <= 4 MAX_QUADS.
// Dispatch ceil(n H / WG) workgroups.

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k_cache: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const MAX_QUADS: u32 = 64u;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = params[0];
    let heads = params[1];
    let kv_heads = params[2];
    let quads = params[3] / 4u;
    let start = params[4];
    let max_seq = params[5];
    let scale = bitcast<f32>(params[6]);
    if (gid.x >= n * heads) { return; }
    let row = gid.x / heads;
    let h = gid.x % heads;
    let kv_base = h / (heads / kv_heads) * max_seq * quads;
    let q_base = gid.x * quads;

    var query: array<vec4<f32>, MAX_QUADS>;
    for (var d = 0u; d < quads; d++) { query[d] = q[q_base + d] * scale; }
    // Key 0 starts the running maximum, so no exponent is ever taken of a huge negative value
    // (approximate exp implementations return garbage there).
    var acc: array<vec4<f32>, MAX_QUADS>;
    var m = 0.0;
    for (var d = 0u; d < quads; d++) { m += dot(query[d], k_cache[kv_base + d]); }
    for (var d = 0u; d < quads; d++) { acc[d] = v_cache[kv_base + d]; }
    var l = 1.0;
    for (var t = 1u; t <= start + row; t++) {
        let k = kv_base + t * quads;
        var s = 0.0;
        for (var d = 0u; d < quads; d++) { s += dot(query[d], k_cache[k + d]); }
        let new_m = max(m, s);
        let correction = exp(m - new_m);
        let p = exp(s - new_m);
        l = l * correction + p;
        for (var d = 0u; d < quads; d++) { acc[d] = acc[d] * correction + p * v_cache[k + d]; }
        m = new_m;
    }
    for (var d = 0u; d < quads; d++) { out[q_base + d] = acc[d] / l; }
}
