//! vkstats: the Vulkan driver's statistics for WGSL compute kernels (on NVIDIA: registers per
//! invocation, spilled local memory, shared memory, binary size), which decide how many
//! workgroups an SM holds. Kernels are compiled as wgpu compiles the trusted ones (naga
//! SPIR-V without bounds checks or loop bounding) and built into pipelines with
//! VK_KHR_pipeline_executable_properties. Feed it the files `DEEPBELIEF_DUMP_SHADERS=DIR`
//! writes; files named `*.finish.wgsl` use the `finish` entry point, the others `main`.
//!
//!   vkstats DIR/gemm*.wgsl
use ash::vk;
use std::ffi::CStr;

/// SPIR-V of `entry` and the (binding, descriptor type) pairs its bind group 0 declares.
fn compile(src: &str, entry: &str) -> Result<(Vec<u32>, Vec<(u32, vk::DescriptorType)>), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all()).validate(&module).map_err(|e| format!("{e:?}"))?;
    let mut options = naga::back::spv::Options::default();
    options.lang_version = (1, 3);
    options.bounds_check_policies = naga::proc::BoundsCheckPolicies::default();
    options.force_loop_bounding = false;
    options.zero_initialize_workgroup_memory = naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None;
    let pipeline = naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: entry.to_string() };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| format!("{e:?}"))?;
    let bindings = module
        .global_variables
        .iter()
        .filter_map(|(_, var)| {
            let ty = match var.space {
                naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
                naga::AddressSpace::Storage { .. } => vk::DescriptorType::STORAGE_BUFFER,
                _ => return None,
            };
            var.binding.as_ref().map(|b| (b.binding, ty))
        })
        .collect();
    Ok((words, bindings))
}

fn statistic(s: &vk::PipelineExecutableStatisticKHR) -> String {
    // SAFETY: the union member read is the one `format` names.
    unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
            vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => s.value.f64.to_string(),
            _ => (s.value.b32 != 0).to_string(),
        }
    }
}

fn main() -> Result<(), String> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        return Err("usage: vkstats KERNEL.wgsl ... (from DEEPBELIEF_DUMP_SHADERS)".into());
    }
    // SAFETY: plain Vulkan calls on objects created here, in order, with valid create infos.
    unsafe {
        let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None).map_err(|e| format!("instance: {e}"))?;
        let devices = instance.enumerate_physical_devices().map_err(|e| format!("devices: {e}"))?;
        let physical = devices
            .into_iter()
            .max_by_key(|p| instance.get_physical_device_properties(*p).device_type == vk::PhysicalDeviceType::DISCRETE_GPU)
            .ok_or("no Vulkan device")?;
        let name = CStr::from_ptr(instance.get_physical_device_properties(physical).device_name.as_ptr()).to_string_lossy().into_owned();
        println!("device: {name}");
        let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(0).queue_priorities(&[1.0])];
        let extensions = [ash::khr::pipeline_executable_properties::NAME.as_ptr()];
        let mut features = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
        let info = vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&extensions).push_next(&mut features);
        let device = instance.create_device(physical, &info, None).map_err(|e| format!("{name}: no VK_KHR_pipeline_executable_properties ({e})"))?;
        let executables = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
        for path in &files {
            let src = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            let entry_point = if path.ends_with(".finish.wgsl") { "finish" } else { "main" };
            let (words, bindings) = compile(&src, entry_point).map_err(|e| format!("{path}: {e}"))?;
            let shader = device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None).map_err(|e| format!("{path}: {e}"))?;
            let layout_bindings: Vec<_> = bindings
                .iter()
                .map(|(b, t)| vk::DescriptorSetLayoutBinding::default().binding(*b).descriptor_type(*t).descriptor_count(1).stage_flags(vk::ShaderStageFlags::COMPUTE))
                .collect();
            let set_layout = device.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&layout_bindings), None).map_err(|e| format!("{path}: {e}"))?;
            let set_layouts = [set_layout];
            let layout = device.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None).map_err(|e| format!("{path}: {e}"))?;
            let entry_name = std::ffi::CString::new(entry_point).expect("no NUL");
            let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(shader).name(&entry_name);
            let create = vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout).flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR);
            let pipeline = device.create_compute_pipelines(vk::PipelineCache::null(), &[create], None).map_err(|(_, e)| format!("{path}: {e}"))?[0];
            let properties = executables.get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline)).map_err(|e| format!("{path}: {e}"))?;
            let mut line = path.rsplit('/').next().unwrap_or(path).to_string();
            for index in 0..properties.len() as u32 {
                let executable = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(index);
                for s in executables.get_pipeline_executable_statistics(&executable).map_err(|e| format!("{path}: {e}"))? {
                    line += &format!("  {}={}", CStr::from_ptr(s.name.as_ptr()).to_string_lossy(), statistic(&s));
                }
            }
            println!("{line}");
            device.destroy_pipeline(pipeline, None);
            device.destroy_pipeline_layout(layout, None);
            device.destroy_descriptor_set_layout(set_layout, None);
            device.destroy_shader_module(shader, None);
        }
        device.destroy_device(None);
        instance.destroy_instance(None);
    }
    Ok(())
}
