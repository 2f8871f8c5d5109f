//! Assembles kernels from `shaders/*.wgsl` and caches their pipelines.
//!
//! A kernel's source is: generated `const` declarations (its compile-time variant: tile sizes,
//! operand layouts), the kernel files, the shared math `shaders/common.wgsl` (always), and,
//! when it draws random numbers, the Philox snippet `shaders/philox.wgsl`. Text constants
//! rather than WGSL overrides, because workgroup-memory array sizes and `@workgroup_size` must
//! follow them, which override support in the WGSL compilers of the day does not cover
//! everywhere. [`kernel_sources`] lists every module the crate compiles, for the tests that
//! check them without a GPU (tests/gpu_uniform_layout.rs).
//!
//! [`PipelineCache`] compiles each variant once per device, on first use, against one
//! explicit bind-group layout shared by all variants of a kernel family, so bind groups are
//! built the same way whichever variant runs.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;

/// The Philox4x32-10 snippet (`uniform`, `philox_block`, `add_u64`, ...).
pub const PHILOX: &str = include_str!("../../shaders/philox.wgsl");

/// The math every kernel must compute alike (`softplus`, `sigmoid`, `byte_to_unit`, the
/// workgroup reduction tree, ...), appended to every kernel.
pub const COMMON: &str = include_str!("../../shaders/common.wgsl");

/// A compile-time constant prepended to a kernel source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Const {
    U32(u32),
    Bool(bool),
}

/// `const NAME: type = value;` lines, then `source`, then [`COMMON`], then the Philox snippet
/// if asked for.
pub fn assemble(source: &str, constants: &[(&str, Const)], philox: bool) -> String {
    let mut text = String::with_capacity(source.len() + COMMON.len() + if philox { PHILOX.len() } else { 0 } + 64 * constants.len() + 2);
    for (name, value) in constants {
        match value {
            Const::U32(v) => writeln!(text, "const {name}: u32 = {v}u;"),
            Const::Bool(v) => writeln!(text, "const {name}: bool = {v};"),
        }
        .expect("writing to a String");
    }
    text.push('\n');
    text.push_str(source);
    text.push('\n');
    text.push_str(COMMON);
    if philox {
        text.push('\n');
        text.push_str(PHILOX);
    }
    text
}

/// One kernel module as the crate compiles it.
#[doc(hidden)]
pub struct KernelSource {
    /// The module's name (the host file's label); its uniforms' Rust twins are registered
    /// under it in tests/gpu_uniform_layout.rs.
    pub module: &'static str,
    /// Which compile-time variant, where the module has several.
    pub variant: String,
    pub source: String,
}

/// Every kernel module the crate compiles, assembled as the host assembles it (all variants
/// of the GEMM and the AIS kernel), for the tests that parse and validate them without a GPU.
#[doc(hidden)]
pub fn kernel_sources() -> Vec<KernelSource> {
    let one = |module: &'static str, source: String| KernelSource { module, variant: String::new(), source };
    let mut all = vec![one("affine_sigmoid", super::affine_sigmoid::source()), one("evaluate", super::evaluate::source()), one("reduce", super::reduce::source()), one("schedule", super::schedule::source()), one("sample", super::sample::source()), one("philox_probe", super::sample::probe_source())];
    all.push(one("autoencoder", super::autoencoder::source()));
    all.push(one("lbfgs", super::lbfgs::source()));
    all.push(one("mlp_adaptive", super::mlp::source()));
    all.push(one("local_rbm", super::local_rbm::source()));
    all.push(one("local_rbm_train", super::local_rbm::train_source()));
    all.extend(super::local_rbm::tiled_sources().into_iter().map(|(module, variant, source)| KernelSource { module, variant, source }));
    all.push(one("rtrl_sensitivity", super::recurrent::source()));
    all.push(one("rtrl_step", super::recurrent_step::source()));
    all.push(one("rtrl_fold", super::recurrent_fold::source()));
    all.extend([one("sparse_coding_codes", super::sparse_coding::codes_source()), one("sparse_coding_basis", super::sparse_coding::basis_source())]);
    all.extend(super::update::sources().into_iter().map(|(module, source)| one(module, source)));
    all.extend(super::trainer::gather_sources().into_iter().map(|(module, source)| one(module, source)));
    all.extend([32, 64, 128, 256].map(|wg| KernelSource { module: "ais", variant: format!("WG={wg}"), source: super::ais::source(wg) }));
    all.extend(super::gemm::variant_sources().into_iter().map(|(variant, source)| KernelSource { module: "gemm", variant, source }));
    all
}

/// What wgpu adds to a native kernel's code (browsers apply their own checks regardless).
///
/// wgpu's defaults bound every loop with an extra counter and clamp every array index. On an
/// H100 (Vulkan, 2026-11-22) the loop counters alone cost the 784 × 500 CD-1 epoch 0.069 s
/// against 0.057 s without them, and the clamps cost the large products another 10% (4096 ×
/// 11008 CD-1 batches of 192: 23.6 s per million examples with both, 19.5 without the loop
/// counters, 17.4 without either).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// Index clamps kept, loop counters dropped: every loop in shaders/ runs to a bound the
    /// kernel computes, which is all that dropping them requires.
    Bounded,
    /// Neither: for kernels that guard every index themselves (gemm.wgsl: each load and store
    /// is checked against the matrix shapes, each workgroup-memory index is in range by
    /// construction of the tile sizes).
    Trusted,
}

/// A shader module from WGSL with the given checks. `DEEPBELIEF_SHADER_CHECKS=full` restores
/// wgpu's full checks everywhere (`bounded`: no kernel goes without index clamps).
pub fn module(device: &wgpu::Device, label: &str, source: String, checks: Checks) -> wgpu::ShaderModule {
    let desc = wgpu::ShaderModuleDescriptor { label: Some(label), source: wgpu::ShaderSource::Wgsl(source.into()) };
    let setting = std::env::var("DEEPBELIEF_SHADER_CHECKS").unwrap_or_default();
    if cfg!(target_arch = "wasm32") || setting == "full" {
        return device.create_shader_module(desc);
    }
    let runtime = match (checks, setting.as_str()) {
        (Checks::Trusted, s) if s != "bounded" => wgpu::ShaderRuntimeChecks::unchecked(),
        _ => {
            let mut bounded = wgpu::ShaderRuntimeChecks::checked();
            bounded.force_loop_bounding = false;
            bounded
        }
    };
    // SAFETY: see `Checks`: every loop in shaders/ is bounded, and the kernels compiled as
    // `Trusted` keep all their accesses in range themselves.
    unsafe { device.create_shader_module_trusted(desc, runtime) }
}

/// With `DEEPBELIEF_DUMP_SHADERS=DIR` (native only), writes each assembled kernel to
/// `DIR/<label>.<entry point>.wgsl`, for `tools/vkstats` (registers and spills per variant, see
/// docs/GPU_TUNING.md).
fn dump_source(label: &str, entry_point: &str, source: &str) {
    if cfg!(target_arch = "wasm32") {
        return;
    }
    if let Ok(dir) = std::env::var("DEEPBELIEF_DUMP_SHADERS") {
        let name: String = label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
        let path = std::path::Path::new(&dir).join(format!("{name}.{entry_point}.wgsl"));
        if let Err(e) = std::fs::write(&path, source) {
            eprintln!("DEEPBELIEF_DUMP_SHADERS: could not write {}: {e}", path.display());
        }
    }
}

/// Compute pipelines of one kernel family (one bind-group layout), built once per variant.
pub struct PipelineCache {
    label: &'static str,
    checks: Checks,
    layout: wgpu::PipelineLayout,
    pipelines: Mutex<HashMap<String, wgpu::ComputePipeline>>,
}

impl PipelineCache {
    pub fn new(device: &wgpu::Device, label: &'static str, bind_group_layout: &wgpu::BindGroupLayout) -> Self {
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(bind_group_layout)],
            immediate_size: 0,
        });
        PipelineCache { label, checks: Checks::Bounded, layout, pipelines: Mutex::new(HashMap::new()) }
    }

    /// Compiles this family's kernels with `checks` (see [`Checks`]) instead of `Bounded`.
    pub fn with_checks(mut self, checks: Checks) -> Self {
        self.checks = checks;
        self
    }

    /// The pipeline for `entry_point` of the variant named `key`; `source` builds its WGSL the
    /// first time only.
    pub fn get(&self, device: &wgpu::Device, key: &str, entry_point: &str, source: impl FnOnce() -> String) -> wgpu::ComputePipeline {
        let full_key = format!("{key}/{entry_point}");
        let mut pipelines = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pipeline) = pipelines.get(&full_key) {
            return pipeline.clone();
        }
        let label = format!("{}:{full_key}", self.label);
        let source = source();
        dump_source(&label, entry_point, &source);
        let module = module(device, &label, source, self.checks);
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: Some(&self.layout),
            module: &module,
            entry_point: Some(entry_point),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &[],
                // Every kernel here writes its workgroup memory before reading it. (Browsers
                // zero it regardless.)
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        pipelines.insert(full_key, pipeline.clone());
        pipeline
    }
}

/// A layout entry for a compute-stage buffer binding.
pub fn buffer_entry(binding: u32, ty: wgpu::BufferBindingType, has_dynamic_offset: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset, min_binding_size: None },
        count: None,
    }
}

/// Workgroup counts `(x, y, z)` for `groups` workgroups, each dimension ≤ 65,535; kernels
/// number their workgroups `(wid.z · nwg.y + wid.y) · nwg.x + wid.x` and skip those ≥ `groups`.
pub fn grid(groups: u32) -> (u32, u32, u32) {
    const MAX: u32 = 65_535;
    if groups == 0 {
        return (0, 0, 0);
    }
    let x = groups.min(MAX);
    let rest = groups.div_ceil(x);
    let y = rest.min(MAX);
    (x, y, rest.div_ceil(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_and_respects_limits() {
        for groups in [1u32, 2, 65_535, 65_536, 200_000, 65_535 * 65_535 + 7] {
            let (x, y, z) = grid(groups);
            assert!(x <= 65_535 && y <= 65_535 && z <= 65_535);
            assert!(x as u64 * y as u64 * z as u64 >= groups as u64, "{groups}: {x} {y} {z}");
        }
    }

    #[test]
    fn assemble_prepends_constants() {
        let text = assemble("fn f() {}", &[("BM", Const::U32(64)), ("T", Const::Bool(true))], false);
        assert!(text.starts_with("const BM: u32 = 64u;\nconst T: bool = true;\n"));
        assert!(assemble("", &[], true).contains("fn philox4x32_10"));
        assert!(assemble("", &[], false).contains("fn softplus") && !assemble("", &[], false).contains("fn philox4x32_10"));
    }
}

/// One prepared dispatch whose bind group takes a dynamic offset into a [`StepTable`]
/// (`super::buffers::StepTable`): the per-batch RNG step and row shift reach the kernel without
/// new bind groups. Shared by the GEMM, sampling and gather calls.
pub struct SlotDispatch {
    pub pipeline: wgpu::ComputePipeline,
    pub bind_group: wgpu::BindGroup,
    /// Workgroups; `(0, 0, 0)` for an empty operation, which records nothing.
    pub groups: (u32, u32, u32),
    /// The dynamic offset of each table slot.
    pub slot_offsets: Vec<u32>,
}

impl SlotDispatch {
    pub fn new(pipeline: wgpu::ComputePipeline, bind_group: wgpu::BindGroup, groups: (u32, u32, u32), slots: &super::buffers::StepTable) -> Self {
        SlotDispatch { pipeline, bind_group, groups, slot_offsets: (0..slots.len()).map(|i| slots.offset(i)).collect() }
    }

    /// Records the dispatch into `pass` with the values of table slot `slot`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, slot: u32) {
        if self.groups.0 == 0 {
            return;
        }
        let offset = *self.slot_offsets.get(slot as usize).unwrap_or_else(|| panic!("slot {slot} of {}", self.slot_offsets.len()));
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[offset]);
        pass.dispatch_workgroups(self.groups.0, self.groups.1, self.groups.2);
    }
}
