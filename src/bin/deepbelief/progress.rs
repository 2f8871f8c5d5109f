//! Training progress: a progress bar per layer on a terminal, one plain line per epoch
//! otherwise (logs, pipes, CI).

use crate::output::Output;
use deepbelief::train::monitor::EpochMetrics;
use deepbelief::train::EpochReport;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

pub enum Progress {
    Bars { current: Option<ProgressBar> },
    Lines { output: Output },
}

impl Progress {
    /// Bars need somewhere to draw: standard error, and standard output too unless `--json`
    /// took it (a pipe reading plain lines should get them).
    pub fn new(output: Output) -> Progress {
        let terminal = std::io::stderr().is_terminal() && (output.json || std::io::stdout().is_terminal());
        if terminal {
            Progress::Bars { current: None }
        } else {
            Progress::Lines { output }
        }
    }

    pub fn layer_started(&mut self, layer: usize, n_layers: usize, max_epochs: usize) {
        match self {
            Progress::Bars { current } => {
                let bar = ProgressBar::new(max_epochs as u64).with_style(
                    ProgressStyle::with_template("{prefix} [{bar:30}] epoch {pos}/{len} {msg} ({elapsed})").expect("a valid template").progress_chars("=> "),
                );
                bar.set_prefix(format!("layer {}/{n_layers}", layer + 1));
                *current = Some(bar);
            }
            Progress::Lines { output } => output.text(&format!(
                "{:>5} {:>6} {:>3} {:>12} {:>10} {:>9} {:>11} {:>8} {:>10} {:>10}",
                "layer", "epoch", "k", "recon error", "lr", "momentum", "incr ratio", "seconds", "F(train)", "pseudo-LL"
            )),
        }
    }

    pub fn epoch(&mut self, layer: usize, report: &EpochReport, metrics: Option<&EpochMetrics>) {
        let free_energy = metrics.map_or(f64::NAN, |m| m.free_energy_train);
        let pseudo_likelihood = metrics.and_then(|m| m.pseudo_log_likelihood).unwrap_or(f64::NAN);
        match self {
            Progress::Bars { current: Some(bar) } => {
                bar.set_position(report.epoch as u64);
                bar.set_message(format!("recon {:.6}  lr {:.4}", report.reconstruction_error, report.learning_rate));
            }
            Progress::Bars { current: None } => {}
            Progress::Lines { output } => output.text(&format!(
                "{:>5} {:>6} {:>3} {:>12.6} {:>10.6} {:>9.4} {:>11.3e} {:>8.2} {:>10.3} {:>10.3}",
                layer + 1,
                report.epoch,
                report.cd_k,
                report.reconstruction_error,
                report.learning_rate,
                report.momentum,
                report.increment_ratio,
                report.seconds,
                free_energy,
                pseudo_likelihood
            )),
        }
    }

    /// `summary` ends the layer's bar (after its "layer i/n" prefix), or is printed as a line.
    pub fn layer_finished(&mut self, layer: usize, n_layers: usize, summary: String) {
        match self {
            Progress::Bars { current } => {
                if let Some(bar) = current.take() {
                    bar.finish_with_message(summary);
                }
            }
            Progress::Lines { output } => output.text(&format!("layer {}/{n_layers}: {summary}", layer + 1)),
        }
    }
}
