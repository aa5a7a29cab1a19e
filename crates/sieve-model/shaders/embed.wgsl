// Token embedding lookup: row `ids[r]` of the table, times a scale (1 but for gemma3), for each
// of n rows (the table is the output head's weights, so its rows are columns here), from one
// block of the table's rows: rows whose token lies in another block are left to its launch.
//
// w:      [B, D] weights (weights.wgsl), the table's rows first .. first + B.
// ids:    [n] u32 (checked against V by the caller).
// x:      [n, D] f32 out.
// params: [D, n, bits of the scale, B, first].
//
// One invocation per output value; dispatch ceil(D / WG) x n workgroups.

@group(0) @binding(0) var<storage, read_write> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = params[0];
    let row = gid.y;
    if (gid.x >= d || row >= params[1]) { return; }
    let token = ids[row] - params[4];
    // Below `first` the subtraction wraps past B.
    if (token >= params[3]) { return; }
    x[row * d + gid.x] = weight(gid.x, token / 4u, params[3] / 4u, d)[token % 4u] * bitcast<f32>(params[2]);
}
