// Masked argmax of one logits row: the allowed token with the highest logit, lowest id on ties.
//
// logits: [width] f32.
// mask:   [ceil(width / 32)] u32; bit (i % 32) of word (i / 32) set means token i is allowed.
//         Ids at or past `vocab_size` and NaN logits are never chosen.
// params: [width, vocab_size].
// out:    [1] u32: the chosen id, or 0xffffffff when no token is allowed.
//
// One workgroup of WG invocations; each scans a strided share of the row, then a tree reduction.

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> mask: array<u32>;
@group(0) @binding(2) var<storage, read_write> params: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

const WG: u32 = {{ workgroup_size }}u;
const NONE: u32 = 0xffffffffu;

var<workgroup> best_value: array<f32, WG>;
var<workgroup> best_id: array<u32, WG>;

// Whether (va, ia) beats (vb, ib): a real candidate beats none, a higher value wins, then the lower id.
fn better(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
    if (ia == NONE) { return false; }
    if (ib == NONE) { return true; }
    return va > vb || (va == vb && ia < ib);
}

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) tid: u32) {
    let width = params[0];
    let limit = min(width, params[1]);
    var value = 0.0;
    var id = NONE;
    for (var i = tid; i < limit; i += WG) {
        let x = logits[i];
        let allowed = ((mask[i / 32u] >> (i % 32u)) & 1u) == 1u && x == x;
        if (allowed && better(x, i, value, id)) {
            value = x;
            id = i;
        }
    }
    best_value[tid] = value;
    best_id[tid] = id;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (tid < stride && better(best_value[tid + stride], best_id[tid + stride], best_value[tid], best_id[tid])) {
            best_value[tid] = best_value[tid + stride];
            best_id[tid] = best_id[tid + stride];
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        out[0] = best_id[0];
    }
}
