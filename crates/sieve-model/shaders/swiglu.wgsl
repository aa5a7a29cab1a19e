// The gated MLP's first half for n rows: RMSNorm, the fused gate/up projection, then
// silu(gate) * up.
//
// x:      [n, D] f32, the residual stream.
// norm_w: [D] f32.
// w:      [D, 2F / 4] vec4: gate columns 0..F, then up columns F..2F.
// act:    [n, F / 4] vec4 out.
// params: [D, F, n, bits of eps].
//
// A workgroup computes WG / SLICES groups of four adjacent gate columns and the same up columns
// for ROWS rows, reading the residual stream directly; the SLICES invocations of a column group
// share its sums (every SLICES-th input each) and add their parts through workgroup memory, as
// in linear_residual.wgsl. Every invocation takes part of each row's sum of squares for the
// norm. Dispatch ceil(F / 4 / (WG / SLICES)) x ceil(n / ROWS) workgroups.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> norm_w: array<f32>;
@group(0) @binding(2) var<storage, read_write> w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> act: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const WG: u32 = {{ workgroup_size }}u;
const ROWS: u32 = {{ rows }}u;
const SLICES: u32 = {{ slices }}u;
const COLS: u32 = WG / SLICES;

var<workgroup> squares: array<f32, WG * ROWS>;
var<workgroup> inv_rms: array<f32, ROWS>;
var<workgroup> gate_parts: array<vec4<f32>, select(1u, WG * ROWS, SLICES > 1u)>;
var<workgroup> up_parts: array<vec4<f32>, select(1u, WG * ROWS, SLICES > 1u)>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let d = params[0];
    let quads = params[1] / 4u;
    let n = params[2];
    let eps = bitcast<f32>(params[3]);
    let r0 = group.y * ROWS;
    let rows = min(ROWS, n - r0);
    let slice = lid / COLS;
    let col = group.x * COLS + lid % COLS;

    for (var r = 0u; r < ROWS; r++) {
        var sum = 0.0;
        if (r < rows) {
            for (var i = lid; i < d; i += WG) {
                let v = x[(r0 + r) * d + i];
                sum += v * v;
            }
        }
        squares[r * WG + lid] = sum;
    }
    workgroupBarrier();
    if (lid < ROWS) {
        var sum = 0.0;
        for (var j = 0u; j < WG; j++) { sum += squares[lid * WG + j]; }
        inv_rms[lid] = inverseSqrt(sum / f32(d) + eps);
    }
    workgroupBarrier();

    var gate: array<vec4<f32>, ROWS>;
    var up: array<vec4<f32>, ROWS>;
    if (col < quads) {
        for (var i = slice; i < d; i += SLICES) {
            let row = i * 2u * quads;
            let g = w[row + col] * norm_w[i];
            let u = w[row + quads + col] * norm_w[i];
            for (var r = 0u; r < rows; r++) {
                let t = x[(r0 + r) * d + i];
                gate[r] += t * g;
                up[r] += t * u;
            }
        }
    }
    if (SLICES > 1u) {
        for (var r = 0u; r < ROWS; r++) {
            gate_parts[r * WG + lid] = gate[r];
            up_parts[r * WG + lid] = up[r];
        }
        workgroupBarrier();
        if (slice == 0u) {
            for (var r = 0u; r < ROWS; r++) {
                for (var s = 1u; s < SLICES; s++) {
                    gate[r] += gate_parts[r * WG + s * COLS + lid];
                    up[r] += up_parts[r * WG + s * COLS + lid];
                }
            }
        }
    }
    if (slice != 0u || col >= quads) { return; }
    for (var r = 0u; r < rows; r++) {
        let g = gate[r] * inv_rms[r];
        act[(r0 + r) * quads + col] = g / (vec4<f32>(1.0) + exp(-g)) * up[r] * inv_rms[r];
    }
}
