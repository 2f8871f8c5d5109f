//! `deepbelief bench --local-rbm`: issue 19's Table 3 replica on the CPU reference
//! (`deepbelief::local_rbm::bench`): seconds per million examples of CD-1 with batches of 192
//! for the overlapping-patch model (24×24 patches 8 apart, 192 hidden units each) at each of
//! `--local-sizes` (48, 144, 192: a scaled version and the paper's two columns), one row per
//! size printed as measured (with `--json`, one JSON object per line). `--backend gpu` times
//! the device-resident trainer instead (`engine::local_rbm`): the batches submitted back to
//! back, their mean per batch.
//!
//! `--local-dump FILE` instead writes two small cases (an untied Gaussian layer and a tied
//! binary one: parameters, a batch, the sampling uniforms, and our h0, v1, h1 and CD-1
//! gradient) as JSON for `bench/local_rbm_numpy.py --check FILE`, which recomputes them.

use crate::backend_choice::{self, BackendChoice};
use crate::output::Output;
use clap::Args;
use deepbelief::local_rbm::bench::{LocalBenchRow, BATCH, SIZES};
use deepbelief::local_rbm::train::sample_bernoulli;
use deepbelief::local_rbm::{cd1_gradient, CoverLists, Geometry, LocalRbm, PassBuffers};
use deepbelief::model::VisibleUnits;
use deepbelief::report::atomic::write_atomically;
use deepbelief::rng::{Purpose, RngStream};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct LocalRbmBenchArgs {
    /// Time CD-1 of the local-patch RBM (issue 19, Raina et al.'s Table 3) instead of RBM epochs.
    #[arg(long)]
    pub local_rbm: bool,
    /// --local-rbm: image sides (24×24 patches 8 apart: side − 24 a multiple of 8).
    #[arg(long, value_name = "SIDE,SIDE,...", value_delimiter = ',', default_values_t = SIZES)]
    pub local_sizes: Vec<usize>,
    /// --local-rbm: timed batches of 192 per size (the median is reported).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub local_batches: usize,
    /// --local-rbm: untimed batches first.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub local_warmups: usize,
    /// --local-rbm: write the NumPy peer's agreement cases to this JSON file instead of timing.
    #[arg(long, value_name = "FILE")]
    pub local_dump: Option<PathBuf>,
    /// --local-rbm --backend gpu: instead of timing, GPU timestamps around every dispatch of
    /// --local-batches batches after --local-warmups (each dispatch in its own pass): each
    /// dispatch's label, µs and TFLOP/s, their sum and the batch's span, per size (with --json,
    /// one object per size). The products' kernels are DEEPBELIEF_LOCAL_TILING's (old, new, ...).
    /// Needs the adapter's timestamp queries.
    #[arg(long)]
    pub local_profile: bool,
}

pub fn run(args: &LocalRbmBenchArgs, backend: BackendChoice, output: Output) -> Result<(), String> {
    if let Some(path) = &args.local_dump {
        return dump_cases(path, output);
    }
    let engine = backend_choice::engine(backend)?;
    if engine.is_gpu() {
        // The device's product kernels: a bad value is refused before any size.
        deepbelief::gpu::local_rbm::LocalTiling::from_env()?;
    }
    if args.local_profile {
        let deepbelief::engine::Engine::Gpu(ctx) = &engine else {
            return Err("--local-profile times the device: add --backend gpu".into());
        };
        for &size in &args.local_sizes {
            let p = pollster::block_on(deepbelief::local_rbm::bench::profile_gpu(ctx, size, args.local_warmups, args.local_batches, 1))?;
            print_profile(size, &p, output);
        }
        return Ok(());
    }
    let print = |r: &LocalBenchRow| {
        let paper = match (r.paper_dual_core_cpu, r.paper_gtx_280) {
            (Some(cpu), Some(gpu)) => format!(" (Table 3: dual-core CPU {cpu:.0} s, GTX 280 {gpu:.0} s)"),
            _ => String::new(),
        };
        output.text(&format!(
            "local RBM {0}×{0}: {1} × {2} ({3} positions, {4} weights), batch {5}: {6:.4} s per batch ({7} timed), {8:.1} s per million examples{paper}; {9}{10}",
            r.image_size,
            r.n_visible,
            r.n_hidden,
            r.positions,
            r.weights,
            r.batch,
            r.seconds_median,
            r.batches_timed,
            r.seconds_per_million,
            r.device,
            r.tiling.as_ref().map_or(String::new(), |t| format!(", tiling {t}"))
        ));
        if output.json {
            let line = serde_json::to_string(&r).expect("a benchmark row serialises");
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}").and_then(|_| out.flush());
        }
    };
    pollster::block_on(engine.bench_local_rbm(&args.local_sizes, args.local_warmups, args.local_batches, print))?;
    Ok(())
}

fn print_profile(size: usize, p: &deepbelief::gpu::local_rbm_trainer::LocalProfile, output: Output) {
    output.text(&format!(
        "local RBM profile {size}×{size} (tiling {}; {} bank group{}, {} dispatches per batch; mean of {} batches, each dispatch in its own pass):",
        p.tiling,
        p.bank_groups,
        if p.bank_groups == 1 { "" } else { "s" },
        p.dispatches.len(),
        p.batches
    ));
    let rate = |gflop: f64, us: f64| if gflop > 0.0 && us > 0.0 { format!("  ({gflop:.2} GFLOP, {:.1} TFLOP/s)", gflop / us * 1e-3) } else { String::new() };
    for d in &p.dispatches {
        output.text(&format!("  {:>9.1} µs  {}{}", d.microseconds, d.label, rate(d.gflop, d.microseconds)));
    }
    output.text(&format!("  {:>9.1} µs  sum of the dispatches per batch{}", p.dispatch_sum_us, rate(p.gflop, p.dispatch_sum_us)));
    output.text(&format!("  {:>9.1} µs  per batch from the first dispatch's start to the last one's end ({:.1} s per million examples)", p.batch_span_us, p.batch_span_us / BATCH as f64));
    if output.json {
        let mut v = serde_json::to_value(p).expect("a profile serialises");
        v["image_size"] = size.into();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}").and_then(|_| out.flush());
    }
}

/// One agreement case: parameters drawn from Philox, a batch, and every intermediate.
fn case(geometry: Geometry, units: VisibleUnits, rows: usize, seed: u64) -> serde_json::Value {
    let stream = RngStream::new(seed, 3, Purpose::DataSample);
    let mut k = 0u64;
    let mut draw = |scale: f32| {
        k += 1;
        scale * (stream.uniform(k) - 0.5)
    };
    let mut layer = LocalRbm::initialise(geometry, units, &vec![0.0; geometry.n_visible()], seed);
    layer.weights.iter_mut().for_each(|w| *w = draw(0.5));
    layer.hidden_bias.iter_mut().for_each(|b| *b = draw(1.0));
    layer.visible_bias.iter_mut().for_each(|b| *b = draw(1.0));
    let batch: Vec<f32> = (0..rows * geometry.n_visible()).map(|_| draw(2.0) + 0.5).collect();
    let (nh, step) = (geometry.n_hidden(), 7);
    let sampling = RngStream::new(seed, step, Purpose::HiddenSample);
    let uniforms: Vec<f32> = (0..(rows * nh) as u64).map(|i| sampling.uniform(i)).collect();
    let cover = CoverLists::new(&geometry);
    let mut buffers = PassBuffers::default();
    let mut h0 = vec![0.0; rows * nh];
    layer.hidden_probabilities(&batch, &mut h0, &mut buffers);
    let mut sample = vec![0.0; rows * nh];
    sample_bernoulli(&h0, sampling, 0, &mut sample);
    let mut v1 = vec![0.0; batch.len()];
    layer.visible_expectations(&cover, &sample, &mut v1, &mut buffers);
    let mut h1 = vec![0.0; rows * nh];
    layer.hidden_probabilities(&v1, &mut h1, &mut buffers);
    let gradient = cd1_gradient(&layer, &cover, &batch, seed, step);
    json!({
        "geometry": geometry, "visible_units": units, "rows": rows,
        "weights": layer.weights, "hidden_bias": layer.hidden_bias, "visible_bias": layer.visible_bias,
        "batch": batch, "uniforms": uniforms,
        "h0": h0, "v1": v1, "h1": h1,
        "gradient_weights": gradient.weights, "gradient_visible_bias": gradient.visible_bias, "gradient_hidden_bias": gradient.hidden_bias,
    })
}

fn dump_cases(path: &Path, output: Output) -> Result<(), String> {
    let cases = vec![
        case(Geometry::new(14, 14, 1, 6, 2, 5, false)?, VisibleUnits::Gaussian, 6, 1),
        case(Geometry::new(10, 12, 2, 4, 2, 3, true)?, VisibleUnits::Bernoulli, 4, 2),
    ];
    let text = serde_json::to_string(&json!({ "format": "deepbelief-local-rbm-check/1", "cases": cases })).map_err(|e| e.to_string())?;
    write_atomically(path, text.as_bytes())?;
    output.text(&format!("wrote {} (check with: python3 bench/local_rbm_numpy.py --check {})", path.display(), path.display()));
    Ok(())
}
