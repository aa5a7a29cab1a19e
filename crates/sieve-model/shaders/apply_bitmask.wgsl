// Apply a token bitmask to a block of logits, in place.
//
// logits: [rows, width] f32, row-major and contiguous.
// mask:   [rows, words] u32 with words = ceil(width / 32); bit (i % 32) of word (i / 32)
//         set means token i is allowed. Every id at or past `vocab_size` is forbidden,
//         whatever its bit says (a logits row may be wider than the vocabulary).
// params: [width, words, vocab_size, rows, bits of the f32 value written to forbidden
//         logits]. The fill value comes in at run time: WGSL rejects a constant
//         expression that evaluates to infinity.
//
// One invocation per logit; dispatch ceil(width / WG) x rows workgroups.

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> mask: array<u32>;
@group(0) @binding(2) var<storage, read_write> params: array<u32>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let width = params[0];
    let words = params[1];
    let vocab_size = params[2];
    let rows = params[3];
    let column = gid.x;
    let row = gid.y;
    if (column >= width || row >= rows) {
        return;
    }
    let word = mask[row * words + column / 32u];
    let allowed = column < vocab_size && ((word >> (column % 32u)) & 1u) == 1u;
    if (!allowed) {
        logits[row * width + column] = bitcast<f32>(params[4]);
    }
}
