// The gated MLP's first half for n rows: RMSNorm, the fused gate/up projection, then
// silu(gate) * up, or gelu_tanh(gate) * up (gemma3).
//
// x:      [n, D] f32, the residual stream.
// norm_w: [D] f32.
// w:      [2F, D] weights (weights.wgsl): gate outputs 0..F, then up outputs F..2F.
// act:    [n, F / 4] vec4 out.
// params: [D, F, n, bits of eps, gelu (1 or 0)].
//
// Column groups (four gate columns and the same up columns) and slices as projection.wgsl
// says, reading the residual stream directly; the norms as norms.wgsl computes them.
// Dispatch ceil(F / 4 / (WG / SLICES)) x ceil(n / ROWS) workgroups.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> norm_w: array<f32>;
@group(0) @binding(2) var<storage, read_write> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> act: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let d = params[0];
    let quads = params[1] / 4u;
    let n = params[2];
    let eps = bitcast<f32>(params[3]);
    let gelu = params[4] != 0u;
    let r0 = group.y * ROWS;
    let rows = min(ROWS, n - r0);
    let slice = lid / COLS;
    let col = group.x * COLS + lid % COLS;

    row_norms(lid, r0, rows, d, eps);

    var gate: array<vec4<f32>, ROWS>;
    var up: array<vec4<f32>, ROWS>;
    if (col < quads) {
        // Each slice takes whole runs of RUN inputs (weights.wgsl).
        for (var b = slice; b * RUN < d; b += SLICES) {
            let gate_run = run_of(b, col, 2u * quads, d);
            let up_run = run_of(b, quads + col, 2u * quads, d);
            for (var i = b * RUN; i < min(b * RUN + RUN, d); i++) {
                let g = weight_in(gate_run, i, col, 2u * quads) * norm_w[i];
                let u = weight_in(up_run, i, quads + col, 2u * quads) * norm_w[i];
                for (var r = 0u; r < rows; r++) {
                    let t = x[(r0 + r) * d + i];
                    gate[r] += t * g;
                    up[r] += t * u;
                }
            }
        }
    }
    gate = gather(lid, 0u, gate);
    up = gather(lid, 1u, up);
    if (slice != 0u || col >= quads) { return; }
    for (var r = 0u; r < rows; r++) {
        let g = gate[r] * inv_rms[r];
        var a = g / (vec4<f32>(1.0) + exp(-g));
        if (gelu) {
            // tanh(z) = 1 - 2 / (exp(2z) + 1), finite for any z (WGSL's tanh may not be).
            let z = 0.7978846 * (g + 0.044715 * g * g * g);
            a = 0.5 * g * (vec4<f32>(2.0) - vec4<f32>(2.0) / (exp(2.0 * z) + vec4<f32>(1.0)));
        }
        act[(r0 + r) * quads + col] = a * up[r] * inv_rms[r];
    }
}
