// Token embedding lookup: row `ids[r]` of the table, times a scale (1 but for gemma3), for each
// of n rows.
//
// table:  [V, D] f32.
// ids:    [n] u32 (checked against V by the caller).
// x:      [n, D] f32 out.
// params: [D, n, bits of the scale].
//
// One invocation per output value; dispatch ceil(D / WG) x n workgroups.

@group(0) @binding(0) var<storage, read_write> table: array<f32>;
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = params[0];
    let row = gid.y;
    if (gid.x >= d || row >= params[1]) { return; }
    x[row * d + gid.x] = table[ids[row] * d + gid.x] * bitcast<f32>(params[2]);
}
