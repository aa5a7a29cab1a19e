// Shared by the projections that normalise the residual stream first (qkv_rope, swiglu), which
// prepend it after projection.wgsl and bind the stream as `x`: [n, D] f32.

var<workgroup> squares: array<f32, WG * ROWS>;
var<workgroup> inv_rms: array<f32, ROWS>;

// 1 / RMS of rows r0 .. r0 + rows of `x` into `inv_rms`, every invocation adding part of each
// row's squares. Called from uniform control flow.
fn row_norms(lid: u32, r0: u32, rows: u32, d: u32, eps: f32) {
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
}
