// The per-head RMSNorm of queries and keys, then RoPE, for n rows: the second half of qkv_rope
// for architectures that normalise each head (qkv_rope leaves their queries and keys unrotated).
//
// q:       [n, H hd] f32, in place.
// k_cache: [Hkv, max_seq, hd] f32; row `start + r` of every head, in place.
// q_norm, k_norm: [hd] f32, the norms' weights.
// cos, sin: [max_seq, hd / 2] f32, the rotary angles per position and pair.
// params:  [n, H, Hkv, hd, start, max_seq, bits of eps].
//
// A workgroup per head (the H query heads, then the Hkv key heads) and row; its invocations add
// up the head's squares and then rotate its pairs (2i, 2i + 1). Dispatch (H + Hkv) x n.

const WG: u32 = {{ workgroup_size }}u;

@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(2) var<storage, read_write> q_norm: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_norm: array<f32>;
@group(0) @binding(4) var<storage, read_write> cos_table: array<f32>;
@group(0) @binding(5) var<storage, read_write> sin_table: array<f32>;
@group(0) @binding(6) var<storage, read_write> params: array<u32>;

fn load(query: bool, i: u32) -> f32 {
    if (query) { return q[i]; }
    return k_cache[i];
}

fn store(query: bool, i: u32, v: f32) {
    if (query) { q[i] = v; } else { k_cache[i] = v; }
}

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let heads = params[1];
    let hd = params[3];
    let start = params[4];
    let max_seq = params[5];
    let eps = bitcast<f32>(params[6]);
    let head = group.x;
    let row = group.y;
    let query = head < heads;
    var base = (row * heads + head) * hd;
    if (!query) { base = ((head - heads) * max_seq + start + row) * hd; }

    var sum = 0.0;
    for (var i = lid; i < hd; i += WG) {
        let v = load(query, base + i);
        sum += v * v;
    }
    let inv = inverseSqrt(workgroup_sum(lid, sum) / f32(hd) + eps);

    let half = hd / 2u;
    for (var i = lid; i < half; i += WG) {
        var w0 = k_norm[2u * i];
        var w1 = k_norm[2u * i + 1u];
        if (query) {
            w0 = q_norm[2u * i];
            w1 = q_norm[2u * i + 1u];
        }
        let x0 = load(query, base + 2u * i) * inv * w0;
        let x1 = load(query, base + 2u * i + 1u) * inv * w1;
        let t = (start + row) * half + i;
        let c = cos_table[t];
        let s = sin_table[t];
        store(query, base + 2u * i, x0 * c - x1 * s);
        store(query, base + 2u * i + 1u, x0 * s + x1 * c);
    }
}
