// Shared by the projections (qkv_rope, swiglu, linear_residual), which prepend it.
//
// A workgroup computes WG / SLICES groups of four adjacent output columns for ROWS rows; the
// SLICES invocations of a column group share each of its sums (every SLICES-th input each) and
// add their parts through workgroup memory. A prefill's rows give the GPU enough invocations
// with SLICES = 1 (and no barrier, which costs far more than the loads on a software adapter);
// a decode step's one row does not.

const WG: u32 = {{ workgroup_size }}u;
const ROWS: u32 = {{ rows }}u;
const SLICES: u32 = {{ slices }}u;
const COLS: u32 = WG / SLICES;

// Two sums per column group at most (swiglu's gate and up).
var<workgroup> parts: array<vec4<f32>, select(1u, 2u * WG * ROWS, SLICES > 1u)>;

// `acc`, the `which`-th (0 or 1) sums of this invocation's slice, added up across the slices
// for slice 0. Called from uniform control flow.
fn gather(lid: u32, which: u32, acc: array<vec4<f32>, ROWS>) -> array<vec4<f32>, ROWS> {
    var out = acc;
    if (SLICES > 1u) {
        let base = which * WG * ROWS;
        for (var r = 0u; r < ROWS; r++) { parts[base + r * WG + lid] = acc[r]; }
        workgroupBarrier();
        if (lid < COLS) {
            for (var r = 0u; r < ROWS; r++) {
                for (var s = 1u; s < SLICES; s++) { out[r] += parts[base + r * WG + s * COLS + lid]; }
            }
        }
    }
    return out;
}
