//! A/B knobs of the device epoch, read from the environment when a [`DeviceMlp`](super::DeviceMlp)
//! is built (native only: the browser takes the defaults), so that one device run can profile
//! several settings (`PROFILE_SETTINGS` in bench/toman_device.sh):
//!
//! - `DEEPBELIEF_MLP_FORWARD_TILING=small|medium|wide|large|auto` (default small): the first
//!   layer's GEMM tiles. Its output is N × 25: auto picks 64 × 128 tiles (157 workgroups for
//!   10,000 cases, four fifths of each tile's columns idle); small (32 × 64) gives 313, a
//!   wave and a bit on 132 SMs with two workgroups each, and half the idle columns.
//! - `DEEPBELIEF_MLP_GRADIENT_SPLITS=N|auto` (default auto: a wave of workgroups, each at
//!   least 128 deep): split k of the gradient products the GEMM takes.
//! - `DEEPBELIEF_MLP_KERNELS=fold|gemm` (default fold): fold the narrow layers' gradients into
//!   the `narrow` kernel (per-workgroup partials, summed by `step`), or take them as split-k
//!   GEMMs (2 dispatches each).

use crate::gpu::gemm::Tiling;
use crate::gpu::GpuError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Knobs {
    /// `None`: [`Tiling::auto`].
    pub forward_tiling: Option<Tiling>,
    /// `None`: `gradient_splits`.
    pub gradient_splits: Option<u32>,
    /// The narrow layers' gradients in the `narrow` kernel.
    pub fold: bool,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs { forward_tiling: Some(Tiling::Small), gradient_splits: None, fold: true }
    }
}

impl Knobs {
    /// The defaults, with what the environment sets (native); an unknown value is an error
    /// naming the variable and what it takes.
    pub fn from_env() -> Result<Knobs, GpuError> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            Knobs::parse(|name| std::env::var(name).ok())
        }
        #[cfg(target_arch = "wasm32")]
        Knobs::parse(|_| None)
    }

    pub fn parse(var: impl Fn(&str) -> Option<String>) -> Result<Knobs, GpuError> {
        let mut knobs = Knobs::default();
        let bad = |name: &str, value: &str, expected: &str| GpuError(format!("{name}={value}: expected {expected}"));
        if let Some(value) = var("DEEPBELIEF_MLP_FORWARD_TILING") {
            knobs.forward_tiling = match value.trim() {
                "auto" => None,
                "small" => Some(Tiling::Small),
                "medium" => Some(Tiling::Medium),
                "wide" => Some(Tiling::Wide),
                "large" => Some(Tiling::Large),
                other => return Err(bad("DEEPBELIEF_MLP_FORWARD_TILING", other, "small, medium, wide, large or auto")),
            };
        }
        if let Some(value) = var("DEEPBELIEF_MLP_GRADIENT_SPLITS") {
            knobs.gradient_splits = match value.trim() {
                "auto" => None,
                text => match text.parse::<u32>() {
                    Ok(n) if (1..=256).contains(&n) => Some(n),
                    _ => return Err(bad("DEEPBELIEF_MLP_GRADIENT_SPLITS", text, "auto or a whole number from 1 to 256")),
                },
            };
        }
        if let Some(value) = var("DEEPBELIEF_MLP_KERNELS") {
            knobs.fold = match value.trim() {
                "fold" => true,
                "gemm" => false,
                other => return Err(bad("DEEPBELIEF_MLP_KERNELS", other, "fold or gemm")),
            };
        }
        Ok(knobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<Knobs, GpuError> {
        Knobs::parse(|name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn knobs_parse_and_name_bad_values() {
        assert_eq!(with(&[]).unwrap(), Knobs::default());
        let k = with(&[("DEEPBELIEF_MLP_FORWARD_TILING", "auto"), ("DEEPBELIEF_MLP_GRADIENT_SPLITS", "8"), ("DEEPBELIEF_MLP_KERNELS", "gemm")]).unwrap();
        assert_eq!(k, Knobs { forward_tiling: None, gradient_splits: Some(8), fold: false });
        let e = with(&[("DEEPBELIEF_MLP_GRADIENT_SPLITS", "0")]).unwrap_err();
        assert!(e.0.contains("DEEPBELIEF_MLP_GRADIENT_SPLITS=0"), "{e:?}");
        assert!(with(&[("DEEPBELIEF_MLP_FORWARD_TILING", "tiny")]).unwrap_err().0.contains("small, medium"));
    }
}
