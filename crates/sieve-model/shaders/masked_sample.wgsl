// Masked sampling of one logits row with temperature, top-k and top-p, without sorting.
//
// logits: [width] f32.
// mask:   [ceil(width / 32)] u32; bit (i % 32) of word (i / 32) set means token i is allowed.
//         Ids at or past `vocab_size` and NaN logits are never chosen.
// params: [width, vocab_size, top_k (0 = off), bits of f32 top_p (>= 1 = off),
//          bits of f32 1/temperature, seed low word, seed high word, step, bits of -inf].
//          -inf comes in at run time: WGSL rejects a constant expression that evaluates to
//          infinity (Chromium's compiler does; wgpu's naga let it pass).
// out:    [1] u32: the chosen id, or 0xffffffff when no token is allowed.
//
// With s = logit / temperature over the allowed tokens:
// 1. top-k keeps the tokens whose s is at least the k-th largest s (ties all kept);
// 2. top-p then keeps the tokens whose s is at least the largest v for which the mass
//    exp(s - max) of the tokens with s >= v is at least top_p times the mass kept by step 1;
// 3. u in [0, 1) is hashed from (seed, step); the chosen token is the first id, in id order,
//    at which the running kept mass exceeds u times the total kept mass.
// Thresholds 1 and 2 are found exactly by building the order-preserving u32 key of s bit by
// bit (32 counting passes each) instead of sorting. One workgroup of WG invocations.

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> mask: array<u32>;
@group(0) @binding(2) var<storage, read_write> params: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

const WG: u32 = {{ workgroup_size }}u;
const NONE: u32 = 0xffffffffu;

var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;
var<workgroup> flag: u32;

// An order-preserving map from f32 to u32 (larger float, larger key).
fn key(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}

fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn is_allowed(i: u32) -> bool {
    let x = logits[i];
    return ((mask[i / 32u] >> (i % 32u)) & 1u) == 1u && x == x;
}

fn score(i: u32) -> f32 {
    return logits[i] * bitcast<f32>(params[4]);
}

fn sum_u(tid: u32, v: u32) -> u32 {
    red_u[tid] = v;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (tid < stride) {
            red_u[tid] += red_u[tid + stride];
        }
        workgroupBarrier();
    }
    let r = red_u[0];
    workgroupBarrier();
    return r;
}

fn sum_f(tid: u32, v: f32) -> f32 {
    red_f[tid] = v;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (tid < stride) {
            red_f[tid] += red_f[tid + stride];
        }
        workgroupBarrier();
    }
    let r = red_f[0];
    workgroupBarrier();
    return r;
}

fn max_f(tid: u32, v: f32) -> f32 {
    red_f[tid] = v;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (tid < stride) {
            red_f[tid] = max(red_f[tid], red_f[tid + stride]);
        }
        workgroupBarrier();
    }
    let r = red_f[0];
    workgroupBarrier();
    return r;
}

// Number of allowed tokens with key(s) >= t.
fn count_at_least(tid: u32, limit: u32, t: u32) -> u32 {
    var c = 0u;
    for (var i = tid; i < limit; i += WG) {
        if (is_allowed(i) && key(score(i)) >= t) {
            c += 1u;
        }
    }
    return sum_u(tid, c);
}

// Mass exp(s - m) of the allowed tokens with key(s) >= t.
fn mass_at_least(tid: u32, limit: u32, t: u32, m: f32) -> f32 {
    var z = 0.0;
    for (var i = tid; i < limit; i += WG) {
        let s = score(i);
        if (is_allowed(i) && key(s) >= t) {
            z += exp(s - m);
        }
    }
    return sum_f(tid, z);
}

@compute @workgroup_size({{ workgroup_size }}, 1, 1)
fn main(@builtin(local_invocation_index) tid: u32) {
    let limit = min(params[0], params[1]);
    let top_k = params[2];
    let top_p = bitcast<f32>(params[3]);

    var local_max = bitcast<f32>(params[8]);
    var local_count = 0u;
    for (var i = tid; i < limit; i += WG) {
        if (is_allowed(i)) {
            local_max = max(local_max, score(i));
            local_count += 1u;
        }
    }
    let m = max_f(tid, local_max);
    let count = sum_u(tid, local_count);

    var threshold = 0u;
    if (tid == 0u) {
        flag = select(0u, 1u, top_k > 0u && top_k < count);
    }
    if (workgroupUniformLoad(&flag) == 1u) {
        var ans = 0u;
        for (var b = 0u; b < 32u; b += 1u) {
            let candidate = ans | (0x80000000u >> b);
            if (count_at_least(tid, limit, candidate) >= top_k) {
                ans = candidate;
            }
        }
        threshold = ans;
    }

    if (tid == 0u) {
        flag = select(0u, 1u, top_p > 0.0 && top_p < 1.0);
    }
    if (workgroupUniformLoad(&flag) == 1u) {
        let goal = top_p * mass_at_least(tid, limit, threshold, m);
        var ans = 0u;
        for (var b = 0u; b < 32u; b += 1u) {
            let candidate = ans | (0x80000000u >> b);
            if (mass_at_least(tid, limit, max(candidate, threshold), m) >= goal) {
                ans = candidate;
            }
        }
        threshold = max(ans, threshold);
    }

    // Kept mass per contiguous chunk, then one invocation walks the chunks in id order.
    let chunk = (limit + WG - 1u) / WG;
    let begin = min(tid * chunk, limit);
    let end = min(begin + chunk, limit);
    var z = 0.0;
    for (var i = begin; i < end; i += 1u) {
        let s = score(i);
        if (is_allowed(i) && key(s) >= threshold) {
            z += exp(s - m);
        }
    }
    red_f[tid] = z;
    workgroupBarrier();
    if (tid == 0u) {
        var total = 0.0;
        for (var c = 0u; c < WG; c += 1u) {
            total += red_f[c];
        }
        let h = pcg(params[5] ^ pcg(params[6] ^ pcg(params[7])));
        let goal_mass = f32(h >> 8u) * (1.0 / 16777216.0) * total;
        // The chunk where the running mass passes the goal_mass (the last non-empty one if
        // rounding leaves the goal_mass unreached), then the token inside it.
        var found = NONE;
        var before = 0.0;
        var crossed = false;
        for (var c = 0u; c < WG && !crossed; c += 1u) {
            if (red_f[c] > 0.0) {
                found = c;
                if (before + red_f[c] > goal_mass) {
                    crossed = true;
                } else {
                    before += red_f[c];
                }
            }
        }
        if (!crossed && found != NONE) {
            before -= red_f[found];
        }
        var chosen = NONE;
        if (found != NONE) {
            var running = before;
            let first = min(found * chunk, limit);
            let stop = min(first + chunk, limit);
            for (var i = first; i < stop; i += 1u) {
                let s = score(i);
                if (is_allowed(i) && key(s) >= threshold) {
                    running += exp(s - m);
                    chosen = i;
                    if (running > goal_mass) {
                        break;
                    }
                }
            }
        }
        out[0] = chosen;
    }
}
