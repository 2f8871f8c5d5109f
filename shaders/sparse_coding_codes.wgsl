// sparse_coding_codes.wgsl: Raina, Madhavan & Ng's parallel L1-regularised least squares
// (ICML 2009, §6.1) for one block of cases resident on the device: every case's codes a
// minimise ½‖x − Ba‖² + β‖a‖₁ for a fixed basis B (k inputs × n bases). CPU reference:
// src/sparse_coding/raina.rs (the same iteration, rules and step sizes); the host side is
// src/gpu/sparse_coding/codes.rs, which records, around the products of gemm.wgsl:
//
//   GEMM  Q = BᵀB (n × n), C = X·B (rows × n: each case's Bᵀx)
//   (warm codes:) GEMM Y = A·Bᵀ, then start_cases; GEMM QA = A[slot_cases]·Q, refresh
//   (zero codes:) start_cases, which also sets g = −C
//   start_cases   per case: f = ½‖x − y‖² + β‖a‖₁ (y = 0 for zero codes), status running
//   then per iteration, over the slots of the cases still running (the host's active list):
//     (every 10th iteration from the 11th:) GEMM QA = A[slot_cases]·Q, refresh: g = QA − c
//     direction    d = a* − a, a*_j = sign(u_j)·max(|u_j| − β, 0) / r_j, u_j = r_j a_j − g_j,
//                  r_j = Q_jj (a*_j = 0 where r_j = 0)
//     GEMM  QD = D·Q
//     line_search  α₁ = dᵀg, α₂ = ½dᵀQd and, for each step size t = 2⁰ … 2⁻²⁰,
//                  Σ_j |a_j + t d_j| − |a_j| over the coordinates that move (d_j ≠ 0); the
//                  largest t with α₂t² + α₁t + β·ΔL1(t) < 0 is taken: a += t·d (where d ≠ 0),
//                  g += t·Qd, f += change. The case stops when −change < tolerance·f (the
//                  paper's rule, per case), when no t lowers f, or when d = 0; at
//                  max_iterations it stops unconverged.
//   finish_cases  per case: ‖a‖₁ and the non-zero codes, for the batch record
//   measure_cases per case: ½‖x − y‖² (y = A·Bᵀ from the GEMM), ‖a‖₁, non-zero codes
//
// The host reads the case records back after every few iterations (one read-back per
// convergence check), rebuilds the active list from their status, and dispatches the next
// iterations over that many slots with the smallest prepared product that holds them.
//
// Buffers (f32 row-major unless said; one bind group per block, every entry point):
//   0 params   uniform CodeParams (below)
//   1 data     read: X, rows × k
//   2 codes    rw: A, rows × n (the block's latest codes: the starting point, updated in place)
//   3 work     rw: C at c_offset (rows × n), g at g_offset (rows × n), and at qd_offset the
//              products the GEMMs write: QD or QA (slots × n) or Y (rows × k); each region
//              starts on a multiple of 64 elements
//   4 direction rw: D, slots × n (row s: the case slot_cases[s])
//   5 gram     read: Q = BᵀB, n × n
//   6 slot_cases read: the case of each slot (the active list, u32), then zeros
//   7 cases    rw: CaseRecord per case (status, iterations, objective, ‖a‖₁, non-zero codes)
//
// Workgroups: one per case (start_cases, finish_cases, measure_cases) or per slot (refresh,
// direction, line_search), numbered (wid.z · nwg.y + wid.y) · nwg.x + wid.x; 128 invocations,
// invocation t taking coordinates t, t + 128, … in order.
//
// Precision: f32 throughout (the CPU reference tracks α and f in f64). a + t·d and g + t·Qd
// round once, as on the CPU (t is a power of two). The sums are sequential per invocation then
// a fixed tree, so a run is reproducible on one device; α₁, α₂ and ΔL1 agree with the f64 sums
// to ~1e-6 of the sums of their terms' magnitudes, which moves the stopping point of a case
// within the rule's own slack.

struct CodeParams {
    rows: u32,
    n_bases: u32,
    n_inputs: u32,
    slots: u32,
    c_offset: u32,
    g_offset: u32,
    qd_offset: u32,
    max_iterations: u32,
    beta: f32,
    tolerance: f32,
    warm: u32,
    _pad: u32,
}

struct CaseRecord {
    // 0 running, 1 stopped by the rule (or at the optimum), 2 stopped at max_iterations.
    status: u32,
    iterations: u32,
    objective: f32,
    l1: f32,
    nonzero: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const WG: u32 = 128u;
const STEPS: u32 = 21u;
const RUNNING: u32 = 0u;
const STOPPED: u32 = 1u;
const LIMIT: u32 = 2u;

@group(0) @binding(0) var<uniform> params: CodeParams;
@group(0) @binding(1) var<storage, read> data: array<f32>;
@group(0) @binding(2) var<storage, read_write> codes: array<f32>;
@group(0) @binding(3) var<storage, read_write> work: array<f32>;
@group(0) @binding(4) var<storage, read_write> direction: array<f32>;
@group(0) @binding(5) var<storage, read> gram: array<f32>;
@group(0) @binding(6) var<storage, read> slot_cases: array<u32>;
@group(0) @binding(7) var<storage, read_write> cases: array<CaseRecord>;

// The line search's sums: per invocation 6 vec4 = (α₁, α₂, moving, 0) then ΔL1 of the 21
// steps (and 3 spare lanes).
var<workgroup> search_tree: array<vec4<f32>, 768>;
var<workgroup> chosen_step: f32;
var<workgroup> case_status: u32;

fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
}

fn soft_threshold(u: f32, beta: f32) -> f32 {
    if (u > beta) {
        return u - beta;
    }
    if (u < -beta) {
        return u + beta;
    }
    return 0.0f;
}

// 2⁻ᵠ, exactly.
fn step_size(q: u32) -> f32 {
    return bitcast<f32>((127u - q) << 23u);
}

// The status of case i, the same value in every invocation (for uniform control flow).
fn uniform_status(t: u32, i: u32) -> u32 {
    if (t == 0u) {
        case_status = cases[i].status;
    }
    return workgroupUniformLoad(&case_status);
}

@compute @workgroup_size(128)
fn start_cases(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = group_index(wid, nwg);
    if (i >= params.rows) {
        return;
    }
    let n = params.n_bases;
    let k = params.n_inputs;
    var squares = 0.0f;
    for (var e = t; e < k; e = e + WG) {
        var r = data[i * k + e];
        if (params.warm != 0u) {
            r = r - work[params.qd_offset + i * k + e];
        }
        squares = squares + r * r;
    }
    var l1 = 0.0f;
    for (var j = t; j < n; j = j + WG) {
        l1 = l1 + abs(codes[i * n + j]);
        if (params.warm == 0u) {
            work[params.g_offset + i * n + j] = -work[params.c_offset + i * n + j];
        }
    }
    let sums = workgroup_sum2(t, WG, 1u, vec2<f32>(squares, l1));
    if (t == 0u) {
        cases[i] = CaseRecord(RUNNING, 0u, 0.5f * sums.x + params.beta * sums.y, 0.0f, 0u, 0u, 0u, 0u);
    }
}

@compute @workgroup_size(128)
fn refresh(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let s = group_index(wid, nwg);
    if (s >= params.slots) {
        return;
    }
    let i = slot_cases[s];
    if (cases[i].status != RUNNING) {
        return;
    }
    let n = params.n_bases;
    for (var j = t; j < n; j = j + WG) {
        work[params.g_offset + i * n + j] = work[params.qd_offset + s * n + j] - work[params.c_offset + i * n + j];
    }
}

@compute @workgroup_size(128)
fn direction_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let s = group_index(wid, nwg);
    if (s >= params.slots) {
        return;
    }
    let i = slot_cases[s];
    if (cases[i].status != RUNNING) {
        return;
    }
    let n = params.n_bases;
    let beta = params.beta;
    for (var j = t; j < n; j = j + WG) {
        let a = codes[i * n + j];
        let r = gram[j * n + j];
        var minimiser = 0.0f;
        if (r > 0.0f) {
            minimiser = soft_threshold(r * a - work[params.g_offset + i * n + j], beta) / r;
        }
        direction[s * n + j] = minimiser - a;
    }
}

@compute @workgroup_size(128)
fn line_search(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let s = group_index(wid, nwg);
    if (s >= params.slots) {
        return;
    }
    let i = slot_cases[s];
    if (uniform_status(t, i) != RUNNING) {
        return;
    }
    let n = params.n_bases;
    var sums: array<vec4<f32>, 6>;
    for (var q = 0u; q < 6u; q = q + 1u) {
        sums[q] = vec4<f32>(0.0f);
    }
    for (var j = t; j < n; j = j + WG) {
        let d = direction[s * n + j];
        if (d != 0.0f) {
            let a = codes[i * n + j];
            sums[0] = sums[0] + vec4<f32>(d * work[params.g_offset + i * n + j], d * work[params.qd_offset + s * n + j], 1.0f, 0.0f);
            for (var q = 0u; q < STEPS; q = q + 1u) {
                let lane = q + 4u;
                sums[lane / 4u][lane % 4u] = sums[lane / 4u][lane % 4u] + (abs(a + step_size(q) * d) - abs(a));
            }
        }
    }
    for (var q = 0u; q < 6u; q = q + 1u) {
        search_tree[q * WG + t] = sums[q];
    }
    workgroupBarrier();
    for (var width = WG / 2u; width >= 1u; width = width >> 1u) {
        if (t < width) {
            for (var q = 0u; q < 6u; q = q + 1u) {
                search_tree[q * WG + t] = search_tree[q * WG + t] + search_tree[q * WG + t + width];
            }
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        var record = cases[i];
        record.iterations = record.iterations + 1u;
        let head = search_tree[0];
        var taken = -1.0f;
        if (head.z == 0.0f) {
            // d = 0: every coordinate at its own minimiser, the optimum.
            record.status = STOPPED;
        } else {
            let alpha1 = head.x;
            let alpha2 = 0.5f * head.y;
            var change = 0.0f;
            for (var q = 0u; q < STEPS; q = q + 1u) {
                let lane = q + 4u;
                let step = step_size(q);
                change = alpha2 * step * step + alpha1 * step + params.beta * search_tree[(lane / 4u) * WG][lane % 4u];
                if (change < 0.0f) {
                    taken = step;
                    break;
                }
            }
            if (taken < 0.0f) {
                record.status = STOPPED;
            } else {
                let previous = record.objective;
                record.objective = previous + change;
                if (-change < params.tolerance * previous) {
                    record.status = STOPPED;
                }
            }
        }
        if (record.status == RUNNING && record.iterations >= params.max_iterations) {
            record.status = LIMIT;
        }
        cases[i] = record;
        chosen_step = taken;
    }
    let step = workgroupUniformLoad(&chosen_step);
    if (step < 0.0f) {
        return;
    }
    for (var j = t; j < n; j = j + WG) {
        let d = direction[s * n + j];
        if (d != 0.0f) {
            codes[i * n + j] = codes[i * n + j] + step * d;
        }
        let g = params.g_offset + i * n + j;
        work[g] = work[g] + step * work[params.qd_offset + s * n + j];
    }
}

@compute @workgroup_size(128)
fn finish_cases(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = group_index(wid, nwg);
    if (i >= params.rows) {
        return;
    }
    let n = params.n_bases;
    var l1 = 0.0f;
    var nonzero = 0.0f;
    for (var j = t; j < n; j = j + WG) {
        let a = codes[i * n + j];
        l1 = l1 + abs(a);
        nonzero = nonzero + select(0.0f, 1.0f, a != 0.0f);
    }
    let sums = workgroup_sum2(t, WG, 1u, vec2<f32>(l1, nonzero));
    if (t == 0u) {
        cases[i].l1 = sums.x;
        cases[i].nonzero = u32(sums.y);
    }
}

@compute @workgroup_size(128)
fn measure_cases(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = group_index(wid, nwg);
    if (i >= params.rows) {
        return;
    }
    let n = params.n_bases;
    let k = params.n_inputs;
    var squares = 0.0f;
    for (var e = t; e < k; e = e + WG) {
        let r = data[i * k + e] - work[params.qd_offset + i * k + e];
        squares = squares + r * r;
    }
    var l1 = 0.0f;
    var nonzero = 0.0f;
    for (var j = t; j < n; j = j + WG) {
        let a = codes[i * n + j];
        l1 = l1 + abs(a);
        nonzero = nonzero + select(0.0f, 1.0f, a != 0.0f);
    }
    let sums = workgroup_sum2(t, WG, 1u, vec2<f32>(squares, l1));
    let count = workgroup_sum(t, WG, 1u, nonzero);
    if (t == 0u) {
        cases[i].objective = 0.5f * sums.x;
        cases[i].l1 = sums.y;
        cases[i].nonzero = u32(count);
    }
}
