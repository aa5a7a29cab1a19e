// The logits of one row: the final RMSNorm, then a dot product with every row of a block of the
// output head's rows (the head is often the embedding table: [V, D], one row per token).
//
// x:      [n, D] f32, the residual stream; row `row` is used.
// norm_w: [D] f32.
// w:      [B, D] weights (weights.wgsl), the head's rows first .. first + B.
// logits: [V / 4] vec4 out; quads first / 4 .. (first + B) / 4 are written.
// params: [D, B, row, bits of eps, first / 4].
//
// One invocation per four tokens (a column quad of the weights); the normalised row is streamed
// through workgroup memory WG values at a time. Dispatch ceil(B / 4 / WG) workgroups.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> norm_w: array<f32>;
@group(0) @binding(2) var<storage, read_write> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> logits: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const WG: u32 = {{ workgroup_size }}u;

var<workgroup> inv_rms: f32;
var<workgroup> tile: array<f32, WG>;
var<workgroup> width: u32;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let vocab = params[1];
    let base = params[2] * params[0];
    let eps = bitcast<f32>(params[3]);
    let quads = vocab / 4u;
    let quad = group.x * WG + lid;
    if (lid == 0u) {
        width = params[0];
        var sum = 0.0;
        for (var i = 0u; i < params[0]; i++) {
            let v = x[base + i];
            sum += v * v;
        }
        inv_rms = inverseSqrt(sum / f32(params[0]) + eps);
    }
    let d = workgroupUniformLoad(&width);

    var acc = vec4<f32>(0.0);
    for (var i0 = 0u; i0 < d; i0 += WG) {
        let i = i0 + lid;
        if (i < d) { tile[lid] = x[base + i] * inv_rms * norm_w[i]; }
        workgroupBarrier();
        if (quad < quads) {
            let count = min(WG, d - i0);
            // WG is a multiple of RUN: the tile holds whole runs (weights.wgsl).
            var run: Run;
            for (var j = 0u; j < count; j++) {
                if (j % RUN == 0u) { run = run_of((i0 + j) / RUN, quad, quads, d); }
                acc += tile[j] * weight_in(run, i0 + j, quad, quads);
            }
        }
        workgroupBarrier();
    }
    if (quad < quads) { logits[params[4] + quad] = acc; }
}
