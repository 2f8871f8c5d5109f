// sparse_coding_basis.wgsl: the basis step of sparse coding (Raina, Madhavan & Ng 2009, §6):
// projected gradient descent on ½‖X − ABᵀ‖² over bases B (k inputs × n bases, row-major, a
// column per basis vector) with every column of norm ≤ 1, for the statistics of the whole set
// S = AᵀA (n × n) and T = XᵀA (k × n), kept on the device as S and −T. CPU reference:
// src/sparse_coding/basis_step.rs (`descend`, the ColumnMajoriser rule); the host side is
// src/gpu/sparse_coding/basis.rs, which records, around the products of gemm.wgsl:
//
//   column_steps    η_j = 1 / Σ_t |S_jt| (0 for an unused basis vector)
//   GEMM  G = B·S
//   gradient_start  G ← G − T (the gradient BS − T); partial sums of ⟨B, G − T⟩ per workgroup
//   objective_start the objective ½‖X‖² + ½⟨B, G − T⟩ → state; running unless every η is 0
//   then per iteration (after the state stopped, each kernel leaves everything as it is):
//     candidate      B' = P(B − G·diag(η)): column by column, B − ηG, its norm, and the
//                    projection (a column of norm above 1 scaled to norm 1, footnote 3)
//     GEMM  P = B'·S
//     change_partials partial sums of (B' − B)(G + P − T) per workgroup
//     decide         Δ = ½⟨B' − B, G + G'⟩ (exact for a quadratic, G' = P − T); Δ > 0:
//                    rejected, stop; else accepted, objective += Δ, and stop when
//                    −Δ < tolerance · objective before
//     accept         if accepted: B ← B', G ← P − T
//
// The host reads the state back after every few iterations (one read-back per convergence
// check) and stops recording iterations once it has stopped or made max_iterations.
//
// Buffers (f32 row-major; one bind group for every entry point):
//   0 params      uniform BasisParams (below)
//   1 state       rw: BasisState (below)
//   2 basis       rw: B, k × n
//   3 candidate   rw: B', k × n
//   4 gradient    rw: G, k × n
//   5 product     read: P = B'·S from the GEMM, k × n
//   6 statistics  rw: S (n × n) at 0, −T (k × n) at t_offset (a multiple of 64); only
//                 scale_statistics writes it
//
// scale_statistics, the forgetting statistics' decay (src/sparse_coding/fit.rs,
// StatisticsRule::Forgetting): S and −T (and the padding between them) times params.forget,
// one element per invocation, before a mini-batch's part is added by the GEMMs; the host puts
// the weighted ½‖X‖² in params.half_data.
//   7 scratch     rw: η (n values) at 0, the start partials at start_offset and the change
//                 partials at change_offset (one per span workgroup)
//
// Workgroups: column_steps one per row of S (grid numbering (wid.z · nwg.y + wid.y) · nwg.x +
// wid.x); candidate one per 16 columns, 16 row lanes (lane l takes rows l, l + 16, … in order);
// gradient_start, change_partials and accept one per `span` elements of the k × n matrices;
// objective_start and decide one workgroup. 256 invocations each.
//
// Precision: f32 sums in a fixed order (sequential per invocation, then common.wgsl's tree,
// then the partials in order): reproducible on one device. The objective is tracked in f32
// for the stopping test, and the accepted changes are summed apart (`decrease`), so the host
// reports the objective after the step as its f64 value before plus that sum. A projected
// column's norm is 1 to within a few f32 rounding errors (the host's copy is projected again
// in f64, `Basis::project_columns`).

struct BasisParams {
    n_inputs: u32,
    n_bases: u32,
    len: u32,
    t_offset: u32,
    span: u32,
    groups: u32,
    start_offset: u32,
    change_offset: u32,
    tolerance: f32,
    half_data: f32,
    forget: f32,
    _pad1: u32,
}

struct BasisState {
    running: u32,
    iterations: u32,
    accepted: u32,
    any_step: u32,
    objective: f32,
    before: f32,
    decrease: f32,
    last_change: f32,
}

const WG: u32 = 256u;
const COLS: u32 = 16u;
const LANES: u32 = 16u;

@group(0) @binding(0) var<uniform> params: BasisParams;
@group(0) @binding(1) var<storage, read_write> state: BasisState;
@group(0) @binding(2) var<storage, read_write> basis: array<f32>;
@group(0) @binding(3) var<storage, read_write> candidate: array<f32>;
@group(0) @binding(4) var<storage, read_write> gradient: array<f32>;
@group(0) @binding(5) var<storage, read> product: array<f32>;
@group(0) @binding(6) var<storage, read_write> statistics: array<f32>;
@group(0) @binding(7) var<storage, read_write> scratch: array<f32>;

var<workgroup> shared_flag: u32;
var<workgroup> column_scale: array<f32, 16>;

fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
}

// state.running, the same in every invocation (for uniform control flow).
fn uniform_running(t: u32) -> u32 {
    if (t == 0u) {
        shared_flag = state.running;
    }
    return workgroupUniformLoad(&shared_flag);
}

@compute @workgroup_size(256)
fn column_steps(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let j = group_index(wid, nwg);
    if (j >= params.n_bases) {
        return;
    }
    let n = params.n_bases;
    var sum = 0.0f;
    for (var c = t; c < n; c = c + WG) {
        sum = sum + abs(statistics[j * n + c]);
    }
    let total = workgroup_sum(t, WG, 1u, sum);
    if (t == 0u) {
        scratch[j] = select(0.0f, 1.0f / total, total > 0.0f);
    }
}

@compute @workgroup_size(256)
fn gradient_start(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let w = group_index(wid, nwg);
    if (w >= params.groups) {
        return;
    }
    let base = w * params.span;
    var sum = 0.0f;
    for (var o = t; o < params.span; o = o + WG) {
        let e = base + o;
        if (e < params.len) {
            let minus_t = statistics[params.t_offset + e];
            let g = gradient[e] + minus_t;
            gradient[e] = g;
            sum = sum + basis[e] * (g + minus_t);
        }
    }
    let total = workgroup_sum(t, WG, 1u, sum);
    if (t == 0u) {
        scratch[params.start_offset + w] = total;
    }
}

@compute @workgroup_size(256)
fn objective_start(@builtin(local_invocation_index) t: u32) {
    var sum = 0.0f;
    for (var w = t; w < params.groups; w = w + WG) {
        sum = sum + scratch[params.start_offset + w];
    }
    var steps = 0.0f;
    for (var j = t; j < params.n_bases; j = j + WG) {
        steps = max(steps, scratch[j]);
    }
    let total = workgroup_sum(t, WG, 1u, sum);
    let largest = workgroup_max(t, WG, 1u, steps);
    if (t == 0u) {
        let objective = params.half_data + 0.5f * total;
        let any_step = select(0u, 1u, largest > 0.0f);
        state = BasisState(any_step, 0u, 0u, any_step, objective, objective, 0.0f, 0.0f);
    }
}

@compute @workgroup_size(256)
fn candidate_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (uniform_running(t) == 0u) {
        return;
    }
    let n = params.n_bases;
    let k = params.n_inputs;
    let column = t % COLS;
    let lane = t / COLS;
    let j = wid.x * COLS + column;
    var squares = 0.0f;
    if (j < n) {
        let eta = scratch[j];
        for (var i = lane; i < k; i = i + LANES) {
            let e = i * n + j;
            let value = basis[e] - eta * gradient[e];
            candidate[e] = value;
            squares = squares + value * value;
        }
    }
    let total = workgroup_sum(t, WG, COLS, squares);
    if (lane == 0u) {
        column_scale[column] = select(1.0f, 1.0f / sqrt(total), total > 1.0f);
    }
    workgroupBarrier();
    let scale = column_scale[column];
    if (j < n && scale < 1.0f) {
        for (var i = lane; i < k; i = i + LANES) {
            let e = i * n + j;
            candidate[e] = candidate[e] * scale;
        }
    }
}

@compute @workgroup_size(256)
fn change_partials(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let w = group_index(wid, nwg);
    if (w >= params.groups || uniform_running(t) == 0u) {
        return;
    }
    let base = w * params.span;
    var sum = 0.0f;
    for (var o = t; o < params.span; o = o + WG) {
        let e = base + o;
        if (e < params.len) {
            let next_gradient = product[e] + statistics[params.t_offset + e];
            sum = sum + (candidate[e] - basis[e]) * (gradient[e] + next_gradient);
        }
    }
    let total = workgroup_sum(t, WG, 1u, sum);
    if (t == 0u) {
        scratch[params.change_offset + w] = total;
    }
}

@compute @workgroup_size(256)
fn decide(@builtin(local_invocation_index) t: u32) {
    if (uniform_running(t) == 0u) {
        if (t == 0u) {
            state.accepted = 0u;
        }
        return;
    }
    var sum = 0.0f;
    for (var w = t; w < params.groups; w = w + WG) {
        sum = sum + scratch[params.change_offset + w];
    }
    let total = workgroup_sum(t, WG, 1u, sum);
    if (t == 0u) {
        var s = state;
        let change = 0.5f * total;
        s.iterations = s.iterations + 1u;
        s.last_change = change;
        if (change > 0.0f) {
            s.running = 0u;
            s.accepted = 0u;
        } else {
            let previous = s.objective;
            s.accepted = 1u;
            s.objective = previous + change;
            s.decrease = s.decrease + change;
            if (-change < params.tolerance * previous) {
                s.running = 0u;
            }
        }
        state = s;
    }
}

@compute @workgroup_size(256)
fn accept(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let w = group_index(wid, nwg);
    if (w >= params.groups || state.accepted == 0u) {
        return;
    }
    let base = w * params.span;
    for (var o = t; o < params.span; o = o + WG) {
        let e = base + o;
        if (e < params.len) {
            basis[e] = candidate[e];
            gradient[e] = product[e] + statistics[params.t_offset + e];
        }
    }
}

@compute @workgroup_size(256)
fn scale_statistics(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let e = group_index(wid, nwg) * WG + t;
    if (e < params.t_offset + params.len) {
        statistics[e] = statistics[e] * params.forget;
    }
}
