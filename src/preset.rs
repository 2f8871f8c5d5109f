//! The named presets, written once: the CLI's `--preset` (`--hinton`) and the page's preset menu
//! (`www/params.js`, whose values an e2e test checks against [`Preset::config`] field by field).

use crate::supervised::SupervisedConfig;
use crate::train::{CdConfig, StackConfig};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum Preset {
    /// Measured to give good models with no other flags (docs/DEFAULTS.md).
    Default,
    /// Masters' DEEP program exactly: adaptive schedule, 24 batches, CD 1→4, full-batch CG.
    Deep,
    /// Hinton's practical guide: fixed schedule, CD-1, batches of 100.
    Hinton,
}

/// A preset's settings, shaped like the page's `PageConfig`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PresetConfig {
    pub stack: StackConfig,
    pub supervised: SupervisedConfig,
}

impl Preset {
    /// The RBMs' settings.
    pub fn rbm(self) -> CdConfig {
        match self {
            Preset::Default => CdConfig::default(),
            Preset::Deep => CdConfig::deep(),
            Preset::Hinton => CdConfig::hinton(),
        }
    }

    /// The stack's settings around the RBMs' (the default layers): only the measured defaults
    /// give the top RBM longer chains.
    pub fn stack(self) -> StackConfig {
        let top_cd_k_end = if self == Preset::Default { StackConfig::default().top_cd_k_end } else { 0 };
        StackConfig { rbm: self.rbm(), top_cd_k_end, ..StackConfig::default() }
    }

    /// The supervised stage's settings (before the data's labels or targets adjust them).
    pub fn supervised(self) -> SupervisedConfig {
        match self {
            Preset::Deep => SupervisedConfig::deep(),
            Preset::Default | Preset::Hinton => SupervisedConfig::default(),
        }
    }

    pub fn config(self) -> PresetConfig {
        PresetConfig { stack: self.stack(), supervised: self.supervised() }
    }
}

#[cfg(test)]
mod tests {
    use super::Preset;
    use crate::supervised::SupervisedConfig;
    use crate::train::{CdConfig, StackConfig};

    #[test]
    fn presets_are_the_configs_they_name() {
        assert_eq!(Preset::Default.stack(), StackConfig::default());
        assert_eq!(Preset::Deep.stack(), StackConfig::deep());
        assert_eq!(Preset::Hinton.stack(), StackConfig { rbm: CdConfig::hinton(), top_cd_k_end: 0, ..StackConfig::default() });
        assert_eq!(serde_json::to_value(Preset::Deep.supervised()).unwrap(), serde_json::to_value(SupervisedConfig::deep()).unwrap());
        assert_eq!(serde_json::to_value(Preset::Hinton.supervised()).unwrap(), serde_json::to_value(SupervisedConfig::default()).unwrap());
    }
}
