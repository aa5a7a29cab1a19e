// Causal grouped-query attention of n new rows against a layer's cache.
//
// q:       [n, H hd / 4] vec4, rotated queries (row r sits at position start + r).
// k_cache, v_cache: [Hkv, max_seq, hd / 4] quads of f16 (two u32 words, pack2x16float);
//          positions 0 ..= start + r are valid for row r.
// out:     [n, H hd / 4] vec4 with one split; with several, [n, H, splits, 1 + hd / 4] vec4:
//          each split's running maximum and sum of weights (x, y of its first vec4), then its
//          unnormalised weighted values, for attention_merge.wgsl to combine.
// params:  [n, H, Hkv, hd, start, max_seq, bits of the score scale, window (0: none), splits,
//          span].
//
// Row r attends to positions first ..= start + r, first = 0 or, with a sliding window, the
// window's first position.
//
// One workgroup per (row, head, split) walks the split's `span` positions (a multiple of WG) a
// chunk of WG positions at a time, one position per invocation: each scores its key, the
// chunk's maximum rescales the running sum (online softmax), and each invocation adds the
// chunk's weighted values to the one quad of the output it owns (so reads of a value row are
// adjacent across invocations). A decode step's one row is split over positions (flash
// decoding) so that its few heads still spread over the GPU; any context length works.
// hd <= 4 WG and hd <= 4 MAX_QUADS. Dispatch (H, n, splits) workgroups.

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k_cache: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> v_cache: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const MAX_QUADS: u32 = 64u;

// A cached quad of f16 as f32.
fn quad(words: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(words.x), unpack2x16float(words.y));
}
const WG: u32 = {{ workgroup_size }}u;

var<workgroup> query: array<vec4<f32>, MAX_QUADS>;
// A chunk's scores, then its weights.
var<workgroup> chunk: array<f32, {{ workgroup_size }}>;
// Positions this workgroup's row attends to, shared so that the chunk loop (with its barriers)
// is uniform.
var<workgroup> positions: u32;
var<workgroup> first_position: u32;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let n = params[0];
    let heads = params[1];
    let kv_heads = params[2];
    let quads = params[3] / 4u;
    let start = params[4];
    let max_seq = params[5];
    let scale = bitcast<f32>(params[6]);
    let h = wid.x;
    let row = wid.y;
    let window = params[7];
    let splits = params[8];
    let split = wid.z;
    if (lane == 0u) {
        let seen = start + row + 1u;
        let first = select(0u, seen - min(seen, window), window > 0u);
        // This split's share of the row's positions (none past the row's last).
        let skip = min(split * params[9], seen - first);
        positions = select(0u, min(params[9], seen - first - skip), row < n && h < heads);
        first_position = first + skip;
    }
    let len = workgroupUniformLoad(&positions);
    let first = workgroupUniformLoad(&first_position);
    let item = row * heads + h;
    let part_base = ((item * splits) + split) * (quads + 1u);
    if (len == 0u) {
        // An empty split weighs nothing in the merge.
        if (splits > 1u && lane == 0u && row < n && h < heads) { out[part_base] = vec4<f32>(0.0); }
        return;
    }
    let kv_base = h / (heads / kv_heads) * max_seq * quads;
    let q_base = item * quads;
    if (lane < quads) { query[lane] = q[q_base + lane] * scale; }
    workgroupBarrier();

    var m = 0.0;       // the running maximum score
    var l = 0.0;       // the running sum of weights
    var acc = vec4<f32>(0.0);
    for (var c = 0u; c < len; c += WG) {
        let t = c + lane;
        let count = min(WG, len - c);
        var s = 0.0;
        if (lane < count) {
            let k = kv_base + (first + t) * quads;
            for (var d = 0u; d < quads; d++) { s += dot(query[d], quad(k_cache[k + d])); }
        }
        chunk[lane] = s;
        workgroupBarrier();
        var top = chunk[0];
        for (var j = 1u; j < count; j++) { top = max(top, chunk[j]); }
        let new_m = select(max(m, top), top, c == 0u);
        // Neither exponent ever takes a huge negative value (approximate exp implementations
        // return garbage there): the first chunk starts the maximum, and padding lanes weigh 0.
        let correction = select(exp(m - new_m), 0.0, c == 0u);
        workgroupBarrier();
        chunk[lane] = select(0.0, exp(s - new_m), lane < count);
        workgroupBarrier();
        var sum = 0.0;
        var add = vec4<f32>(0.0);
        for (var j = 0u; j < count; j++) {
            let p = chunk[j];
            sum += p;
            if (lane < quads) { add += p * quad(v_cache[kv_base + (first + c + j) * quads + lane]); }
        }
        acc = acc * correction + add;
        l = l * correction + sum;
        m = new_m;
        workgroupBarrier();
    }
    if (splits == 1u) {
        if (lane < quads) { out[q_base + lane] = acc / l; }
    } else {
        if (lane < quads) { out[part_base + 1u + lane] = acc; }
        if (lane == 0u) { out[part_base] = vec4<f32>(m, l, 0.0, 0.0); }
    }
}
