// The gated MLP's first half for n rows: RMSNorm, the fused gate/up projection, then
// silu(gate) * up.
//
// x:      [n, D] f32, the residual stream.
// norm_w: [D] f32.
// w:      [D, 2F / 4] vec4: gate columns 0..F, then up columns F..2F.
// act:    [n, F / 4] vec4 out.
// params: [D, F, n, bits of eps].
//
// Each invocation computes four adjacent gate columns and the same four up columns for ROWS
// rows, reading the residual stream directly: one barrier, for the norms, as barriers cost far
// more than loads on a software adapter. Dispatch ceil(F / 4 / WG) x ceil(n / ROWS) workgroups.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> norm_w: array<f32>;
@group(0) @binding(2) var<storage, read_write> w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> act: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const WG: u32 = {{ workgroup_size }}u;
const ROWS: u32 = {{ rows }}u;

var<workgroup> inv_rms: array<f32, ROWS>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let d = params[0];
    let quads = params[1] / 4u;
    let n = params[2];
    let eps = bitcast<f32>(params[3]);
    let r0 = group.y * ROWS;
    let col = group.x * WG + lid;

    if (lid < ROWS && r0 + lid < n) {
        var sum = 0.0;
        for (var i = 0u; i < d; i++) {
            let v = x[(r0 + lid) * d + i];
            sum += v * v;
        }
        inv_rms[lid] = inverseSqrt(sum / f32(d) + eps);
    }
    workgroupBarrier();
    if (col >= quads) { return; }
    let rows = min(ROWS, n - r0);

    var gate: array<vec4<f32>, ROWS>;
    var up: array<vec4<f32>, ROWS>;
    for (var i = 0u; i < d; i++) {
        let row = i * 2u * quads;
        let g = w[row + col] * norm_w[i];
        let u = w[row + quads + col] * norm_w[i];
        for (var r = 0u; r < rows; r++) {
            let t = x[(r0 + r) * d + i];
            gate[r] += t * g;
            up[r] += t * u;
        }
    }
    for (var r = 0u; r < rows; r++) {
        let g = gate[r] * inv_rms[r];
        act[(r0 + r) * quads + col] = g / (vec4<f32>(1.0) + exp(-g)) * up[r] * inv_rms[r];
    }
}
