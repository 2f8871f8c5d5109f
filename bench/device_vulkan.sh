# Sourced by the device scripts (bench/*_device.sh): Vulkan for native wgpu on the device
# machine. The loader from .gl/*.deb where there is none (see /work/.library/device/README.md),
# the NVIDIA ICD where the loader does not find it; WGPU_BACKEND pinned to Vulkan.
if ! ldconfig -p | grep -q 'libvulkan\.so\.1' && ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
export WGPU_BACKEND=vulkan
if [ -z "${VK_DRIVER_FILES:-}" ] && ! ls /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json >/dev/null 2>&1 \
  && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
