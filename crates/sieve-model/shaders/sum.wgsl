// Shared by the kernels that add a value up over their workgroup (norm_add, qk_norm_rope),
// which prepend it.

var<workgroup> partial: array<f32, {{ workgroup_size }}>;

// The sum of every invocation's `value`, for every invocation (the workgroup size is a power of
// two). Called from uniform control flow.
fn workgroup_sum(lid: u32, value: f32) -> f32 {
    partial[lid] = value;
    workgroupBarrier();
    for (var s = {{ workgroup_size }}u / 2u; s > 0u; s >>= 1u) {
        if (lid < s) { partial[lid] += partial[lid + s]; }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}
