//! `deepbelief`: scripted training, evaluation and benchmarks from the command line.

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use clap::{Parser, Subcommand};
    use deepbelief::backend::cpu::CpuBackend;
    use deepbelief::backend::Backend;
    use deepbelief::data::idx;
    use deepbelief::model::format;
    use deepbelief::report::image_grid::{self, Scaling};
    use deepbelief::train::{CdConfig, CdTrainer};
    use std::path::PathBuf;

    #[derive(Parser)]
    #[command(name = "deepbelief", version, about = "Deep belief nets: train, sample, evaluate, benchmark")]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Subcommand)]
    enum Command {
        /// Train one Bernoulli RBM with CD-1 on IDX images and save it.
        TrainRbm {
            /// IDX image file (MNIST family), raw or .gz.
            #[arg(long)]
            images: PathBuf,
            /// Number of hidden units.
            #[arg(long, default_value_t = 100)]
            hidden: usize,
            #[arg(long, default_value_t = 5)]
            epochs: usize,
            #[arg(long, default_value_t = 1)]
            seed: u64,
            #[arg(long, default_value_t = 100)]
            batch_size: usize,
            #[arg(long, default_value_t = 0.1)]
            learning_rate: f32,
            /// Output folder: model.json and filters.pgm.
            #[arg(long)]
            out: PathBuf,
            /// Print one JSON object per epoch instead of text.
            #[arg(long)]
            json: bool,
        },
        /// Create a wgpu device, run a kernel and compare it with the CPU reference.
        GpuCheck,
    }

    pub fn main() -> Result<(), Box<dyn std::error::Error>> {
        match Cli::parse().command {
            Command::TrainRbm { images, hidden, epochs, seed, batch_size, learning_rate, out, json } => {
                let data = idx::load_idx_dataset(&images, None)?;
                let config = CdConfig { n_hidden: hidden, epochs, seed, batch_size: Some(batch_size), learning_rate, ..CdConfig::hinton() };
                let backend = CpuBackend;
                let mut trainer = CdTrainer::new(config, &backend, &data)?;
                if !json {
                    println!("{}: {} cases of {} inputs; {} hidden units; {}", data.name, data.n_cases, data.n_inputs, hidden, backend.describe());
                }
                std::fs::create_dir_all(&out).map_err(|e| format!("{}: cannot create the output folder ({e})", out.display()))?;
                while !trainer.finished() {
                    let report = trainer.train_epoch(&backend, &data)?;
                    if json {
                        println!("{}", serde_json::to_string(&report)?);
                    } else {
                        println!(
                            "epoch {:>3}  reconstruction error {:.6}  ({:.2} s, {:.0} cases/s)",
                            report.epoch, report.reconstruction_error, report.seconds, report.cases_per_second
                        );
                    }
                }
                let model_path = out.join("model.json");
                std::fs::write(&model_path, format::to_json(&trainer.rbm, data.image_shape))
                    .map_err(|e| format!("{}: cannot write the model ({e})", model_path.display()))?;
                let rbm = &trainer.rbm;
                let shape = data.image_shape.unwrap_or((1, data.n_inputs));
                let count = rbm.n_hidden.min(100);
                let filters = image_grid::filters_of(&rbm.weights, rbm.n_visible, rbm.n_hidden, count);
                let grid = image_grid::tile(&filters, count, shape, 10, Scaling::SymmetricPerTile);
                let pgm_path = out.join("filters.pgm");
                std::fs::write(&pgm_path, image_grid::to_pgm(&grid)).map_err(|e| format!("{}: cannot write ({e})", pgm_path.display()))?;
                if !json {
                    println!("saved {} and {}", model_path.display(), pgm_path.display());
                }
            }
            Command::GpuCheck => {
                let ctx = pollster::block_on(deepbelief::gpu::GpuContext::new())?;
                let error = pollster::block_on(deepbelief::gpu::affine_sigmoid::self_check(&ctx))?;
                println!("{}", serde_json::json!({ "adapter": ctx.summary(), "max_abs_error": error }));
            }
        }
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    if let Err(error) = cli::main() {
        eprintln!("deepbelief: {error}");
        std::process::exit(1);
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {}
