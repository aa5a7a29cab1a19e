// A normalised projection added to the residual stream: x += RMSNorm(y) * w, for n rows (the
// norms after gemma3's attention and feed-forward, whose projections linear_residual stores in y
// instead of adding).
//
// y:      [n, D] f32.
// w:      [D] f32, the norm's weights.
// x:      [n, D] f32, updated in place.
// params: [D, n, bits of eps].
//
// A workgroup per row adds up its squares, then scales and adds it. Dispatch n workgroups.

const WG: u32 = {{ workgroup_size }}u;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let d = params[0];
    let eps = bitcast<f32>(params[2]);
    let base = group.x * d;
    var sum = 0.0;
    for (var i = lid; i < d; i += WG) {
        let v = y[base + i];
        sum += v * v;
    }
    let inv = inverseSqrt(workgroup_sum(lid, sum) / f32(d) + eps);
    for (var i = lid; i < d; i += WG) {
        x[base + i] += y[base + i] * inv * w[i];
    }
}
