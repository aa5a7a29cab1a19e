// The logits of one row: the final RMSNorm, then a dot product with every row of the output
// head (tied to the embedding table: [V, D], one row per token).
//
// x:      [n, D] f32, the residual stream; row `row` is used.
// norm_w: [D] f32.
// head:   [V, D / 4] vec4.
// logits: [V] f32 out.
// params: [D, V, row, bits of eps].
//
// One invocation per token; the normalised row is streamed through workgroup memory in tiles
// of 4 WG values. Dispatch ceil(V / WG) workgroups.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> norm_w: array<f32>;
@group(0) @binding(2) var<storage, read_write> head: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const WG: u32 = {{ workgroup_size }}u;

var<workgroup> inv_rms: f32;
var<workgroup> tile: array<vec4<f32>, WG>;
var<workgroup> depth: u32;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let d = params[0];
    let vocab = params[1];
    let base = params[2] * d;
    let eps = bitcast<f32>(params[3]);
    let token = group.x * WG + lid;
    if (lid == 0u) {
        depth = d / 4u;
        var sum = 0.0;
        for (var i = 0u; i < d; i++) {
            let v = x[base + i];
            sum += v * v;
        }
        inv_rms = inverseSqrt(sum / f32(d) + eps);
    }
    let quads = workgroupUniformLoad(&depth);

    var acc = vec4<f32>(0.0);
    for (var i0 = 0u; i0 < quads; i0 += WG) {
        let i = i0 + lid;
        if (i < quads) {
            let e = base + 4u * i;
            tile[lid] = vec4<f32>(x[e], x[e + 1u], x[e + 2u], x[e + 3u]) * inv_rms
                * vec4<f32>(norm_w[4u * i], norm_w[4u * i + 1u], norm_w[4u * i + 2u], norm_w[4u * i + 3u]);
        }
        workgroupBarrier();
        if (token < vocab) {
            let count = min(WG, quads - i0);
            for (var j = 0u; j < count; j++) { acc += tile[j] * head[token * quads + i0 + j]; }
        }
        workgroupBarrier();
    }
    if (token < vocab) { logits[token] = acc.x + acc.y + acc.z + acc.w; }
}
