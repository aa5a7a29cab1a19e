// The per-head RMSNorm of queries and keys, then RoPE, for n rows: the second half of qkv_rope
// for architectures that normalise each head (qkv_rope leaves their queries and keys unrotated).
//
// q:       [n, H hd] f32, in place.
// k_cache: [Hkv, max_seq, hd / 2] pairs of f16 (u32 words, pack2x16float); row `start + r` of
//          every head, in place.
// q_norm, k_norm: [hd] f32, the norms' weights.
// cos, sin: [max_seq, hd / 2] f32, the rotary angles per position and pair.
// params:  [n, H, Hkv, hd, start, max_seq, bits of eps].
//
// A workgroup per head (the H query heads, then the Hkv key heads) and row; its invocations add
// up the head's squares and then rotate its pairs (2i, 2i + 1), each pair one invocation's (a
// key's pair is one word). Dispatch (H + Hkv) x n.

const WG: u32 = {{ workgroup_size }}u;

@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(2) var<storage, read_write> q_norm: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_norm: array<f32>;
@group(0) @binding(4) var<storage, read_write> cos_table: array<f32>;
@group(0) @binding(5) var<storage, read_write> sin_table: array<f32>;
@group(0) @binding(6) var<storage, read_write> params: array<u32>;

// Components 2i and 2i + 1 of a query row or a cached key row (`base` even).
fn load(query: bool, base: u32, i: u32) -> vec2<f32> {
    if (query) { return vec2<f32>(q[base + 2u * i], q[base + 2u * i + 1u]); }
    return unpack2x16float(k_cache[base / 2u + i]);
}

fn store(query: bool, base: u32, i: u32, v: vec2<f32>) {
    if (query) {
        q[base + 2u * i] = v.x;
        q[base + 2u * i + 1u] = v.y;
    } else {
        k_cache[base / 2u + i] = pack2x16float(v);
    }
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

    let half = hd / 2u;
    var sum = 0.0;
    for (var i = lid; i < half; i += WG) {
        let v = load(query, base, i);
        sum += dot(v, v);
    }
    let inv = inverseSqrt(workgroup_sum(lid, sum) / f32(hd) + eps);

    for (var i = lid; i < half; i += WG) {
        var w0 = k_norm[2u * i];
        var w1 = k_norm[2u * i + 1u];
        if (query) {
            w0 = q_norm[2u * i];
            w1 = q_norm[2u * i + 1u];
        }
        let x = load(query, base, i) * inv;
        let x0 = x.x * w0;
        let x1 = x.y * w1;
        let t = (start + row) * half + i;
        let c = cos_table[t];
        let s = sin_table[t];
        store(query, base, i, vec2<f32>(x0 * c - x1 * s, x0 * s + x1 * c));
    }
}
