//! `deepbelief`: train deep belief nets, sample from them, evaluate them, export their
//! weights, and benchmark the engine, from the command line. One file per subcommand.
//!
//! Every command takes `--json`: the last line of standard output is then one JSON object
//! with the command's final figures, and progress text goes to standard error.

#[cfg(not(target_arch = "wasm32"))]
mod autoencoder;
#[cfg(not(target_arch = "wasm32"))]
mod autoencoder_inputs;
#[cfg(not(target_arch = "wasm32"))]
mod autoencoder_model;
#[cfg(not(target_arch = "wasm32"))]
mod autoencoder_supervised;
#[cfg(not(target_arch = "wasm32"))]
mod backend_choice;
#[cfg(not(target_arch = "wasm32"))]
mod bench;
#[cfg(not(target_arch = "wasm32"))]
mod bench_rtrl;
#[cfg(not(target_arch = "wasm32"))]
mod bench_local_rbm;
#[cfg(not(target_arch = "wasm32"))]
mod bench_sparse_coding;
#[cfg(not(target_arch = "wasm32"))]
mod eval;
#[cfg(not(target_arch = "wasm32"))]
mod export;
#[cfg(not(target_arch = "wasm32"))]
mod gpu_check;
#[cfg(not(target_arch = "wasm32"))]
mod grey_images;
#[cfg(not(target_arch = "wasm32"))]
mod input;
#[cfg(not(target_arch = "wasm32"))]
mod local_rbm;
#[cfg(not(target_arch = "wasm32"))]
mod memory_limit;
#[cfg(not(target_arch = "wasm32"))]
mod mlp;
#[cfg(not(target_arch = "wasm32"))]
mod out_lock;
#[cfg(not(target_arch = "wasm32"))]
mod output;
#[cfg(not(target_arch = "wasm32"))]
mod progress;
#[cfg(not(target_arch = "wasm32"))]
mod rtrl;
#[cfg(not(target_arch = "wasm32"))]
mod sample;
#[cfg(not(target_arch = "wasm32"))]
mod sparse_coding;
#[cfg(not(target_arch = "wasm32"))]
mod supervised_args;
#[cfg(not(target_arch = "wasm32"))]
mod supervised_data;
#[cfg(not(target_arch = "wasm32"))]
mod supervised_stage;
#[cfg(not(target_arch = "wasm32"))]
mod test;
#[cfg(not(target_arch = "wasm32"))]
mod train;
#[cfg(not(target_arch = "wasm32"))]
mod train_settings;

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use clap::{Parser, Subcommand};

    #[derive(Parser)]
    #[command(name = "deepbelief", version, about = "Deep belief nets: train, sample, evaluate, export, benchmark")]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Subcommand)]
    enum Command {
        /// Train a stack of RBMs greedily, layer by layer, then (given labels or targets)
        /// supervised layers and optionally fine-tune it all; writes model.json, DEEP.LOG and
        /// filters.png into --out.
        Train(Box<super::train_settings::TrainArgs>),
        /// Evaluate a saved model's supervised layers on new data (mapped through the model's
        /// preprocessing): confusion matrix, misclassification and criterion.
        Test(super::test::TestArgs),
        /// Run Gibbs chains in a trained model's top RBM and save what they show as a PNG grid.
        Sample(super::sample::SampleArgs),
        /// Reconstruction error, free energy and the AIS log-likelihood of a model on data.
        Eval(super::eval::EvalArgs),
        /// Write a model's weights and biases to a NumPy .npz archive.
        Export(super::export::ExportArgs),
        /// Time one CD-1 training epoch on the CPU.
        Bench(super::bench::BenchArgs),
        /// Train a sparse autoencoder or a stack of them (UFLDL) on image patches or MNIST,
        /// optionally with a SoftMax and fine-tuning; writes model.json, filters.png and
        /// AUTOENCODER.LOG into --out.
        Autoencoder(super::autoencoder::AutoencoderArgs),
        /// Learn a sparse coding basis (L1, Raina et al. 2009) on image patches or MNIST;
        /// writes sparse_coding.json and bases.png into --out.
        SparseCoding(super::sparse_coding::SparseCodingArgs),
        /// Train a plain all-sigmoid MLP (no RBM layers; Toman's adaptive steps with robust
        /// training, iRprop, Quickprop, bold driver, backprop or CG) on MNIST IDX files or
        /// Toman's text format; writes mlp.json, errors.csv and MLP.LOG into --out.
        Mlp(Box<super::mlp::MlpArgs>),
        /// Train a recurrent net online by real-time recurrent learning (Moore 2009) or
        /// truncated BPTT on a generated task (addition, NOT, delayed recall, Elman's
        /// letters); writes recurrent.json into --out.
        Rtrl(super::rtrl::RtrlArgs),
        /// Train a local-patch RBM (Raina et al. 2009 §5: per-patch weights, or tied = a
        /// convolutional RBM) or a stack of them on image crops; writes local_rbm.bin and
        /// filters.png into --out.
        LocalRbm(Box<super::local_rbm::LocalRbmArgs>),
        /// Create a wgpu device, run a kernel and compare it with the CPU reference.
        GpuCheck(super::gpu_check::GpuCheckArgs),
    }

    pub fn main() -> Result<(), String> {
        match Cli::parse().command {
            Command::Train(args) => super::train::run(*args),
            Command::Test(args) => super::test::run(args),
            Command::Sample(args) => super::sample::run(args),
            Command::Eval(args) => super::eval::run(args),
            Command::Export(args) => super::export::run(args),
            Command::Bench(args) => super::bench::run(args),
            Command::Autoencoder(args) => super::autoencoder::run(args),
            Command::SparseCoding(args) => super::sparse_coding::run(args),
            Command::Mlp(args) => super::mlp::run(*args),
            Command::Rtrl(args) => super::rtrl::run(args),
            Command::LocalRbm(args) => super::local_rbm::run(*args),
            Command::GpuCheck(args) => super::gpu_check::run(args),
        }
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
