// A projection added to the residual stream, x += input · w, or stored, x = input · w (where
// norm_add.wgsl normalises it before adding), for n rows.
//
// input:  [n, K] f32.
// w:      [N, K] weights (weights.wgsl).
// x:      [n, N / 4] vec4, updated in place.
// params: [K, N, n, add (1) or store (0)].
//
// Column groups and slices as projection.wgsl says, reading the input directly.
// Dispatch ceil(N / 4 / (WG / SLICES)) x ceil(n / ROWS) workgroups.

@group(0) @binding(0) var<storage, read_write> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> w: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) group: vec3<u32>) {
    let quads = params[1] / 4u;
    let n = params[2];
    let r0 = group.y * ROWS;
    let slice = lid / COLS;
    let col = group.x * COLS + lid % COLS;
    let k_len = params[0];
    let rows = min(ROWS, n - r0);

    var acc: array<vec4<f32>, ROWS>;
    if (col < quads) {
        // Each slice takes whole runs of RUN inputs (weights.wgsl).
        for (var b = slice; b * RUN < k_len; b += SLICES) {
            let run = run_of(b, col, quads, k_len);
            for (var i = b * RUN; i < min(b * RUN + RUN, k_len); i++) {
                let wv = weight_in(run, i, col, quads);
                for (var r = 0u; r < rows; r++) { acc[r] += input[(r0 + r) * k_len + i] * wv; }
            }
        }
    }
    acc = gather(lid, 0u, acc);
    if (slice != 0u || col >= quads) { return; }
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < n) {
            let i = (r0 + r) * quads + col;
            x[i] = select(acc[r], x[i] + acc[r], params[3] != 0u);
        }
    }
}
