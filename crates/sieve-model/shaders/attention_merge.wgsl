// Combines the splits of attention.wgsl: each split's weighted values rescaled from its own
// running maximum to the largest, summed and divided by the rescaled sum of weights.
//
// parts:   [n, H, splits, 1 + hd / 4] vec4 (attention.wgsl's out with several splits).
// out:     [n, H hd / 4] vec4.
// params:  [n, H, hd, splits].
//
// One workgroup per (row, head), an invocation per quad of the output. Dispatch (H, n).

@group(0) @binding(0) var<storage, read_write> parts: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> params: array<u32>;

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let n = params[0];
    let heads = params[1];
    let quads = params[2] / 4u;
    let splits = params[3];
    let h = wid.x;
    let row = wid.y;
    if (row >= n || h >= heads || lane >= quads) { return; }
    let item = row * heads + h;
    let base = item * splits * (quads + 1u);
    // Splits with no positions have a sum of 0 and are passed over; the first split always has
    // positions.
    var top = parts[base].x;
    for (var s = 1u; s < splits; s++) {
        let head = parts[base + s * (quads + 1u)];
        if (head.y > 0.0) { top = max(top, head.x); }
    }
    var sum = 0.0;
    var acc = vec4<f32>(0.0);
    for (var s = 0u; s < splits; s++) {
        let at = base + s * (quads + 1u);
        let head = parts[at];
        if (head.y > 0.0) {
            let w = exp(head.x - top);
            sum += w * head.y;
            acc += w * parts[at + 1u + lane];
        }
    }
    out[item * quads + lane] = acc / sum;
}
