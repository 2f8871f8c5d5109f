#![cfg(not(target_arch = "wasm32"))]
//! The kernels as the host assembles them (`shader::kernel_sources`: every module, every GEMM
//! and AIS variant), checked without a GPU through naga, the WGSL front end wgpu uses:
//! - each module parses and validates, so a broken include of common.wgsl or philox.wgsl, or a
//!   function defined twice, fails here;
//! - every struct a kernel binds as a uniform or storage buffer is laid out exactly like its
//!   registered Rust twin, the `#[repr(C)]` struct the host writes into that buffer: member
//!   names in order (Rust snake_case field = WGSL member), byte offsets, sizes, scalar kinds
//!   and the struct's size. A binding without a registered twin fails, so a new kernel cannot
//!   skip the check;
//! - every file in shaders/ is part of some assembled module, so a new kernel file cannot
//!   skip `kernel_sources`.

use deepbelief::gpu::shader::{kernel_sources, KernelSource};
use deepbelief::gpu::{affine_sigmoid, ais, autoencoder, buffers, evaluate, gemm, lbfgs, local_rbm, mlp, recurrent, recurrent_fold, recurrent_step, reduce, sample, schedule, sparse_coding, trainer, update};
use naga::proc::Layouter;
use naga::{AddressSpace, ScalarKind, TypeInner};
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of, size_of_val};

/// One member of a struct as laid out in memory.
#[derive(Clone, Debug, PartialEq)]
struct Member {
    name: String,
    offset: usize,
    size: usize,
    /// Scalar kind and number of components (1 for a scalar, N for vecN or [T; N]).
    kind: (ScalarKind, u32),
}

#[derive(Clone, Debug)]
struct Layout {
    name: String,
    size: usize,
    members: Vec<Member>,
}

trait Scalars {
    const KIND: (ScalarKind, u32);
}
impl Scalars for u32 {
    const KIND: (ScalarKind, u32) = (ScalarKind::Uint, 1);
}
impl Scalars for i32 {
    const KIND: (ScalarKind, u32) = (ScalarKind::Sint, 1);
}
impl Scalars for f32 {
    const KIND: (ScalarKind, u32) = (ScalarKind::Float, 1);
}
impl<T: Scalars, const N: usize> Scalars for [T; N] {
    const KIND: (ScalarKind, u32) = (T::KIND.0, N as u32);
}

fn kind_of<T: Scalars>(_: &T) -> (ScalarKind, u32) {
    T::KIND
}

/// The layout of Rust struct `$t` from its listed fields. The list must cover the struct
/// (checked in `compare`: the fields' sizes add up to its size), and a field that does not
/// exist does not compile.
macro_rules! rust_layout {
    ($t:ty { $($field:ident),* $(,)? }) => {{
        let zero: $t = bytemuck::Zeroable::zeroed();
        let mut members = vec![$(Member { name: stringify!($field).to_string(), offset: offset_of!($t, $field), size: size_of_val(&zero.$field), kind: kind_of(&zero.$field) }),*];
        members.sort_by_key(|m| m.offset);
        Layout { name: stringify!($t).to_string(), size: size_of::<$t>(), members }
    }};
}

fn slot() -> Layout {
    rust_layout!(buffers::SlotRaw { step, row_shift, _pad })
}

fn train_state() -> Layout {
    rust_layout!(schedule::TrainState {
        learning_rate,
        momentum,
        weight_penalty,
        sparsity_penalty,
        sparsity_target,
        adaptive,
        has_previous,
        batch_index,
        cosine_sum,
        cosine_count,
        rms_sum,
        max_increment,
        squared_error,
        last_dot,
        last_norm,
        last_prev_norm,
        last_max_increment,
        last_cosine,
        last_cosine_valid,
        last_gradient_rms,
        last_squared_error,
        _pad0,
        _pad1,
        _pad2,
    })
}

fn gather_params() -> Layout {
    rust_layout!(trainer::GatherParams { rows, width, is_u8, n_cases })
}

fn schedule_params() -> Layout {
    rust_layout!(schedule::ScheduleParams { n_update_partials, n_error_partials, n_weights, log_capacity })
}

fn bias_dims() -> Layout {
    rust_layout!(update::BiasDims { rows, chains, width, hidden_width })
}

/// The Rust twin of each (module, WGSL variable) bound as a uniform or storage struct.
fn twins() -> BTreeMap<(&'static str, &'static str), Layout> {
    BTreeMap::from([
        (("affine_sigmoid", "dims"), rust_layout!(affine_sigmoid::Dims { rows, n_in, n_out, _pad })),
        (("ais", "params"), rust_layout!(ais::Params { runs, n_visible, n_hidden, last, key, _pad })),
        (("rtrl_sensitivity", "dims"), rust_layout!(recurrent::SensitivityDims { rows, k, width, block_cols, col0, own, accumulate, finish })),
        (("rtrl_step", "dims"), rust_layout!(recurrent_step::StepDims { layer, rows, block, blocks, total, outputs, out_offset, count, rate, _pad0, _pad1, _pad2 })),
        (("rtrl_fold", "dims"), rust_layout!(recurrent_fold::FoldDims { rows, width, block_cols, col0, own, accumulate, gradient_accumulate, gradient_offset, row_offset, tensor_offset, _pad0, _pad1 })),
        (("local_rbm", "dims"), rust_layout!(local_rbm::LocalDims { rows, cols, channels, patch_side, stride, units, positions, positions_cols, width, tied, cases, activation, first_position, group_positions, gather_flags, _pad })),
        (("local_rbm_train", "dims"), rust_layout!(local_rbm::LocalDims { rows, cols, channels, patch_side, stride, units, positions, positions_cols, width, tied, cases, activation, first_position, group_positions, gather_flags, _pad })),
        (
            ("local_rbm_train", "params"),
            rust_layout!(local_rbm::TrainParams { key_lo, key_hi, step_lo, step_hi, count, learning_rate, momentum, weight_penalty, sparsity_penalty, sparsity_target, tied_scale, _pad }),
        ),
        (
            ("autoencoder", "params"),
            rust_layout!(autoencoder::AutoencoderParams {
                rows,
                n_visible,
                n_hidden,
                n_params,
                w2_offset,
                b1_offset,
                b2_offset,
                row_groups,
                rho_offset,
                delta_offset,
                kl_offset,
                columns_offset,
                recon_offset,
                recon_groups,
                decay_offset,
                decay_groups,
                decay_span,
                weight_decay,
                sparsity_target,
                sparsity_weight,
                inv_rows,
                _pad0,
                _pad1,
                _pad2,
            }),
        ),
        (("lbfgs", "op"), rust_layout!(lbfgs::Op { n, span, groups, flags, c_slot, c_minus_slot, scale_slot, dot_slot, bad_slot, l1_slot, max_slot, _pad })),
        (("mlp_adaptive", "dp"), rust_layout!(mlp::DeltaParams { n, span, clip, _pad })),
        (("mlp_adaptive", "rp"), rust_layout!(mlp::RuleParams { n, span, groups, robust, count, target_error, up, down, max_step, momentum, growth, robust_factor, row, fold_at, fold_len, fold_scale })),
        (("mlp_adaptive", "np"), rust_layout!(mlp::NarrowParams { rows, layers, clip, stride, row, fold_from, fold, _pad })),
        (
            ("sparse_coding_codes", "params"),
            rust_layout!(sparse_coding::CodeParams { rows, n_bases, n_inputs, slots, c_offset, g_offset, qd_offset, max_iterations, beta, tolerance, warm, _pad }),
        ),
        (
            ("sparse_coding_basis", "params"),
            rust_layout!(sparse_coding::BasisParams { n_inputs, n_bases, len, t_offset, span, groups, start_offset, change_offset, tolerance, half_data, forget, _pad1 }),
        ),
        (("sparse_coding_basis", "state"), rust_layout!(sparse_coding::BasisState { running, iterations, accepted, any_step, objective, before, decrease, last_change })),
        (("evaluate", "params"), rust_layout!(evaluate::Params { rows, width, n_hidden, flags, index_start, out_offset, count, _pad })),
        (("reduce", "params"), rust_layout!(reduce::ReduceParams { n, rows, width, flags, slot, span, _pad0, _pad1 })),
        (("schedule", "params"), schedule_params()),
        (("schedule", "state"), train_state()),
        (("sample", "params"), rust_layout!(sample::Params { len, in_offset, out_offset, purpose, key, step, index_base, invocations, _pad })),
        (("sample", "slot"), slot()),
        (("update", "dims"), rust_layout!(update::UpdateDims { n_visible, n_hidden, total, span })),
        (("update", "state"), train_state()),
        (("update_bias", "dims"), bias_dims()),
        (("update_bias", "state"), train_state()),
        (("update_bias_both", "dims"), bias_dims()),
        (("update_bias_both", "state"), train_state()),
        (("gather", "gather_params"), gather_params()),
        (("gather", "slot"), slot()),
        (("schedule_and_gather", "params"), schedule_params()),
        (("schedule_and_gather", "state"), train_state()),
        (("schedule_and_gather", "gather_params"), gather_params()),
        (("schedule_and_gather", "slot"), slot()),
        (
            ("gemm", "params"),
            rust_layout!(gemm::GemmParams {
                m,
                n,
                k,
                tiles_n,
                tiles_total,
                lda,
                ldb,
                ldc,
                a_offset,
                b_offset,
                c_offset,
                bias_offset,
                order_offset,
                sample_offset,
                lds,
                flags,
                alpha,
                purpose,
                key,
                step,
                index_base,
                splits,
                k_chunk,
                k_split,
                alpha2,
                half_tasks,
                group_rows,
            }),
        ),
        (("gemm", "slot"), slot()),
        (("gemm", "state"), train_state()),
    ])
}

fn label(kernel: &KernelSource) -> String {
    if kernel.variant.is_empty() {
        kernel.module.to_string()
    } else {
        format!("{} ({})", kernel.module, kernel.variant)
    }
}

fn parse(kernel: &KernelSource) -> naga::Module {
    naga::front::wgsl::parse_str(&kernel.source).unwrap_or_else(|e| panic!("{}: {}", label(kernel), e.emit_to_string(&kernel.source)))
}

/// A bound struct of a kernel: its binding and the layout naga computes for it.
struct Binding {
    variable: String,
    space: &'static str,
    group: u32,
    binding: u32,
    layout: Layout,
}

fn struct_bindings(module: &naga::Module) -> Vec<Binding> {
    let mut layouter = Layouter::default();
    layouter.update(module.to_ctx()).expect("layouts of the module's types");
    let mut found = Vec::new();
    for (_, var) in module.global_variables.iter() {
        let space = match var.space {
            AddressSpace::Uniform => "uniform",
            AddressSpace::Storage { .. } => "storage",
            _ => continue,
        };
        let ty = &module.types[var.ty];
        let TypeInner::Struct { members, .. } = &ty.inner else { continue };
        let members = members
            .iter()
            .map(|m| {
                let kind = match module.types[m.ty].inner {
                    TypeInner::Scalar(s) => (s.kind, 1),
                    TypeInner::Vector { size, scalar } => (scalar.kind, size as u32),
                    ref other => panic!("member {:?} of {:?}: {other:?} has no Rust twin type here", m.name, ty.name),
                };
                Member { name: m.name.clone().unwrap_or_default(), offset: m.offset as usize, size: layouter[m.ty].size as usize, kind }
            })
            .collect();
        let binding = var.binding.as_ref().expect("a bound global");
        found.push(Binding {
            variable: var.name.clone().unwrap_or_default(),
            space,
            group: binding.group,
            binding: binding.binding,
            layout: Layout { name: ty.name.clone().unwrap_or_default(), size: layouter[var.ty].size as usize, members },
        });
    }
    found
}

/// The differences between a WGSL struct and its Rust twin, one line each.
fn compare(wgsl: &Layout, rust: &Layout) -> Vec<String> {
    let mut problems = Vec::new();
    let covered: usize = rust.members.iter().map(|m| m.size).sum();
    if covered != rust.size {
        problems.push(format!("the listed fields of {} cover {covered} of its {} bytes (list them all in twins())", rust.name, rust.size));
    }
    if wgsl.size != rust.size {
        problems.push(format!("size: WGSL {} is {} bytes, Rust {} {}", wgsl.name, wgsl.size, rust.name, rust.size));
    }
    for i in 0..wgsl.members.len().max(rust.members.len()) {
        match (wgsl.members.get(i), rust.members.get(i)) {
            (Some(w), Some(r)) if w == r => {}
            (Some(w), Some(r)) => problems.push(format!("member {i}: WGSL `{}` at byte {} ({} bytes, {:?}) but Rust `{}` at byte {} ({} bytes, {:?})", w.name, w.offset, w.size, w.kind, r.name, r.offset, r.size, r.kind)),
            (Some(w), None) => problems.push(format!("member {i}: WGSL `{}` at byte {} has no Rust field", w.name, w.offset)),
            (None, Some(r)) => problems.push(format!("member {i}: Rust `{}` at byte {} has no WGSL member", r.name, r.offset)),
            (None, None) => unreachable!(),
        }
    }
    problems
}

#[test]
fn every_kernel_module_validates() {
    let kernels = kernel_sources();
    let mut failures = Vec::new();
    for kernel in &kernels {
        let module = match naga::front::wgsl::parse_str(&kernel.source) {
            Ok(module) => module,
            Err(e) => {
                failures.push(format!("{}: {}", label(kernel), e.emit_to_string(&kernel.source)));
                continue;
            }
        };
        let mut validator = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default());
        if let Err(e) = validator.validate(&module) {
            failures.push(format!("{}: {}", label(kernel), e.emit_to_string(&kernel.source)));
        }
        assert!(!module.entry_points.is_empty(), "{}: no entry point", label(kernel));
    }
    eprintln!("{} kernel modules parsed and validated", kernels.len());
    assert!(failures.is_empty(), "{} of {} modules fail:\n{}", failures.len(), kernels.len(), failures.join("\n"));
}

#[test]
fn every_bound_struct_matches_its_rust_twin() {
    let twins = twins();
    let mut seen = BTreeMap::new();
    let mut problems = Vec::new();
    for kernel in kernel_sources() {
        for found in struct_bindings(&parse(&kernel)) {
            let key = (kernel.module, found.variable.as_str());
            let listing = format!("{:<20} @group({}) @binding({:>2}) var<{}> {}: {}", kernel.module, found.group, found.binding, found.space, found.variable, found.layout.name);
            let Some(rust) = twins.get(&key) else {
                problems.push(format!("{listing}: no Rust twin registered in twins() (in {})", label(&kernel)));
                continue;
            };
            for problem in compare(&found.layout, rust) {
                problems.push(format!("{listing} ↔ {} (in {}): {problem}", rust.name, label(&kernel)));
            }
            seen.entry(listing).or_insert_with(|| rust.name.clone());
        }
    }
    eprintln!("bound structs and their Rust twins:");
    for (listing, rust) in &seen {
        eprintln!("  {listing} ↔ {rust}");
    }
    problems.dedup();
    assert!(problems.is_empty(), "{} layout problems:\n{}", problems.len(), problems.join("\n"));
    let unused: Vec<_> = twins.keys().filter(|(module, variable)| !seen.keys().any(|l| l.starts_with(&format!("{module:<20} ")) && l.contains(&format!(" {variable}: ")))).collect();
    assert!(unused.is_empty(), "twins registered for bindings no kernel has: {unused:?}");
}

#[test]
fn every_shader_file_is_in_an_assembled_module() {
    let kernels = kernel_sources();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("shaders/") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "wgsl") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).expect("a WGSL file");
        assert!(kernels.iter().any(|k| k.source.contains(&text)), "{} is in no module of shader::kernel_sources(): add the module that uses it", path.display());
    }
    assert!(files >= 20, "{files} WGSL files in {}", dir.display());
}
