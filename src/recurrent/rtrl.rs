//! Real-time recurrent learning as Moore (2009) computes it (§3.2, §5.4–5.5, §5.10).
//!
//! For every weight block `w^{m,n}` and every layer `i` whose activations can depend on it,
//! a sensitivity tensor `ξ^{mn,i}_{s,t,j} = ∂a^i_j/∂w^{m,n}_{s,t}` (eqs. 3.6–3.9) is carried
//! forward in time:
//!
//! ```text
//! ξ^{mn,i}(τ) = σ'(net^i(τ)) ⊙ [ Σ_k w^{i,k} ξ^{mn,k}(τ) + Σ_q μ^{i,q} ξ^{mn,q}(τ − 1)
//!                                + δ_{i,m} δ_{j,s} a^n_t ]
//! ```
//!
//! where `a^n_t` is the block's source (`a^n(τ)` for a feed-forward block, `a^n(τ − 1)` for a
//! recurrent one, 1 for a bias). Layout (Moore's Figure 5.3: one 2-D slice per unit `j`):
//! `ξ^{mn,i}` is an `n_i × P` row-major matrix, `P = n_m · n_n`, element `[j][s · n_n + t]`,
//! so the update is `n_i × n_k` weight matrices times `n_k × P` tensors (GEMM calls,
//! `products`), and the gradient `∂E/∂w^{m,n} = Σ_j ∂E/∂y_j · ξ^{mn,y}_{j}` is a vector times
//! the output layer's tensor.
//!
//! One step is Moore's `RNN::process`: feed forward, `∂E/∂y = y − d`, `E = ½Σ(y − d)²`,
//! update the history (every tensor, layers in increasing order, with this step's weights),
//! the gradient; the trainer then takes the Euler step `w ← w − rate · ∂E/∂w`
//! (`updateWeights`), and the frames cycle at the next step (`cycleLayers`).
//!
//! The shortcut (`RtrlMode::Shortcut`, Moore's ∂E/∂net optimisation): blocks into a layer
//! whose paths to the output use no recurrent edge (`GraphSpec::shortcut_layers`) skip their
//! tensors; their gradient is back-propagation within the step, `∂E/∂w^{m,n} = δ^m ⊗ a^n` with
//! `δ^i = σ'(net^i) ⊙ (∂E/∂y [i = y] + Σ_c w^{c,iᵀ} δ^c)`. It is exact there, since
//! `∂y(τ)/∂w^{m,n}` then has no terms from earlier steps.

use super::error::RecurrentError;
use super::graph::{Block, Source};
use super::network::{add_transposed_matrix_vector, Frame, Network};
use super::products::{sum_of_products, vector_times_matrix, Term, Tile};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtrlMode {
    /// A sensitivity tensor for every block (Moore's unoptimised RTRL).
    Full,
    /// Back-propagation within the step where no path to the output is recurrent.
    Shortcut,
}

/// The most values all sensitivity tensors together may hold: 16 GiB of f32 natively, 1 GiB
/// in wasm32 (whose memory is at most 4 GiB).
pub const MAX_TENSOR_VALUES: u64 = if cfg!(target_arch = "wasm32") { 1 << 28 } else { 1 << 32 };

/// One block's tensors, per layer: `current[i]` (`n_i × P`, empty where layer `i` does not
/// depend on the block) and `previous[i]` (the last step's, kept only for layers that are the
/// source of a recurrent edge).
#[derive(Clone, Debug)]
struct BlockTensors {
    dependents: Vec<bool>,
    current: Vec<Vec<f32>>,
    previous: Vec<Vec<f32>>,
}

#[derive(Clone, Debug)]
pub struct Rtrl {
    pub mode: RtrlMode,
    /// Per block: `None` where the shortcut gives its gradient.
    tensors: Vec<Option<BlockTensors>>,
    shortcut_layers: Vec<bool>,
    recurrent_sources: Vec<bool>,
    prev: Frame,
    frame: Frame,
    de_dy: Vec<f32>,
    /// `∂E(τ)/∂θ` of the last step, in the flat parameter layout.
    gradient: Vec<f32>,
    /// Back-propagated `∂E/∂a` and `δ = ∂E/∂net` per layer (the shortcut's scratch).
    de_da: Vec<Vec<f32>>,
    delta: Vec<Vec<f32>>,
}

/// What one step measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepReport {
    /// `E = ½Σ(y − d)²` of this step's output (before the weights move).
    pub error: f64,
}

/// Values the sensitivity tensors of `net` would hold in `mode` (both frames' copies), counted
/// in u64 so a 32-bit target cannot overflow.
pub fn tensor_values(net: &Network, mode: RtrlMode) -> u64 {
    let graph = &net.graph;
    let shortcut = graph.shortcut_layers();
    let sources = graph.recurrent_sources();
    net.blocks
        .iter()
        .filter(|b| mode == RtrlMode::Full || !shortcut[b.to])
        .map(|b| {
            let dependents = graph.dependents(b.to);
            (1..graph.layers.len()).filter(|&i| dependents[i]).map(|i| graph.layers[i] as u64 * b.len() as u64 * if sources[i] { 2 } else { 1 }).sum::<u64>()
        })
        .sum()
}

impl Rtrl {
    pub fn new(net: &Network, mode: RtrlMode) -> Result<Self, RecurrentError> {
        let graph = &net.graph;
        let values = tensor_values(net, mode);
        if values > MAX_TENSOR_VALUES {
            return Err(RecurrentError::new(
                "layers",
                format!("need {values} sensitivity values ({:.1} GiB); at most {MAX_TENSOR_VALUES} are allowed here", values as f64 * 4.0 / (1u64 << 30) as f64),
            ));
        }
        let shortcut_layers = graph.shortcut_layers();
        let recurrent_sources = graph.recurrent_sources();
        let tensors = net
            .blocks
            .iter()
            .map(|b| {
                if mode == RtrlMode::Shortcut && shortcut_layers[b.to] {
                    return None;
                }
                let dependents = graph.dependents(b.to);
                let sized = |keep: &dyn Fn(usize) -> bool| (0..graph.layers.len()).map(|i| if i > 0 && dependents[i] && keep(i) { vec![0.0f32; graph.layers[i] * b.len()] } else { Vec::new() }).collect();
                Some(BlockTensors { current: sized(&|_| true), previous: sized(&|i| recurrent_sources[i]), dependents })
            })
            .collect();
        let layers = || graph.layers.iter().map(|&n| vec![0.0f32; n]).collect::<Vec<_>>();
        Ok(Rtrl {
            mode,
            tensors,
            shortcut_layers,
            recurrent_sources,
            prev: Frame::zeros(graph),
            frame: Frame::zeros(graph),
            de_dy: vec![0.0; graph.layers[graph.output()]],
            gradient: vec![0.0; net.params.len()],
            de_da: layers(),
            delta: layers(),
        })
    }

    /// Back to the start of a sequence: activations and sensitivities zero.
    pub fn reset(&mut self) {
        let zero = |v: &mut Vec<f32>| v.iter_mut().for_each(|x| *x = 0.0);
        for frame in [&mut self.prev, &mut self.frame] {
            frame.net.iter_mut().chain(frame.act.iter_mut()).chain(frame.deriv.iter_mut()).for_each(zero);
        }
        for t in self.tensors.iter_mut().flatten() {
            t.current.iter_mut().chain(t.previous.iter_mut()).for_each(zero);
        }
    }

    /// The last step's frame (its output is `frame().output()`).
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// `∂E(τ)/∂θ` of the last step.
    pub fn gradient(&self) -> &[f32] {
        &self.gradient
    }

    /// The last step's `∂a^layer/∂w` for parameter block `block` (`n_layer × P`), when kept.
    pub fn sensitivity(&self, block: usize, layer: usize) -> Option<&[f32]> {
        self.tensors.get(block)?.as_ref()?.current.get(layer).filter(|t| !t.is_empty()).map(|t| &t[..])
    }

    /// Whether block `block`'s gradient comes from the shortcut.
    pub fn uses_shortcut(&self, block: usize) -> bool {
        self.tensors[block].is_none()
    }

    /// One step: forward, `∂E/∂y`, `E`, the history, the gradient. The weights do not move
    /// (see [`Rtrl::train_step`]).
    pub fn step(&mut self, net: &Network, input: &[f32], target: &[f32]) -> StepReport {
        // cycleLayers, done before the step rather than after it: the last frame and the last
        // tensors become the previous ones.
        std::mem::swap(&mut self.prev, &mut self.frame);
        for t in self.tensors.iter_mut().flatten() {
            for i in 0..t.current.len() {
                if self.recurrent_sources[i] && t.dependents[i] && i > 0 {
                    std::mem::swap(&mut t.current[i], &mut t.previous[i]);
                }
            }
        }
        net.forward(&self.prev, input, &mut self.frame);
        let error = Network::output_error(&self.frame, target, &mut self.de_dy);
        for (index, block) in net.blocks.iter().enumerate() {
            if let Some(tensors) = self.tensors[index].as_mut() {
                update_history(net, block, tensors, &self.prev, &self.frame);
                let out = net.graph.output();
                let gradient = &mut self.gradient[block.offset..block.offset + block.len()];
                if tensors.dependents[out] {
                    vector_times_matrix(&self.de_dy, &tensors.current[out], gradient);
                } else {
                    gradient.fill(0.0);
                }
            }
        }
        if self.tensors.iter().any(Option::is_none) {
            self.back_propagate(net);
        }
        StepReport { error }
    }

    /// Moore's `process()`: [`Rtrl::step`], then the Euler step `θ ← θ − rate · ∂E/∂θ`.
    pub fn train_step(&mut self, net: &mut Network, input: &[f32], target: &[f32], rate: f32) -> StepReport {
        let report = self.step(net, input, target);
        net.params.iter_mut().zip(&self.gradient).for_each(|(w, g)| *w -= rate * g);
        report
    }

    /// The shortcut's gradients: δ of the shortcut layers, from the output down.
    fn back_propagate(&mut self, net: &Network) {
        let with_tensor: Vec<bool> = self.tensors.iter().map(Option::is_some).collect();
        shortcut_gradients(net, &self.shortcut_layers, &self.prev, &self.frame, &self.de_dy, &with_tensor, &mut self.de_da, &mut self.delta, &mut self.gradient);
    }
}

/// The shortcut's gradients (back-propagation within the step) of the blocks without a tensor
/// (`with_tensor[b]` false) into `gradient`; `de_da` and `delta` are per-layer scratch.
#[allow(clippy::too_many_arguments)]
pub fn shortcut_gradients(net: &Network, shortcut_layers: &[bool], prev: &Frame, frame: &Frame, de_dy: &[f32], with_tensor: &[bool], de_da: &mut [Vec<f32>], delta: &mut [Vec<f32>], gradient: &mut [f32]) {
    let graph = &net.graph;
    let out = graph.output();
    for i in (1..graph.layers.len()).rev() {
        if !shortcut_layers[i] {
            continue;
        }
        let mut e = std::mem::take(&mut de_da[i]);
        if i == out {
            e.copy_from_slice(de_dy);
        } else {
            e.fill(0.0);
        }
        // Consumers of a shortcut layer through feed-forward edges are shortcut layers too
        // (their descendants are the layer's), so their δ is ready.
        for b in net.blocks.iter().filter(|b| b.source == Source::Layer(i)) {
            add_transposed_matrix_vector(net.block_values(b), b.cols, &delta[b.to], &mut e);
        }
        for ((d, &e), &s) in delta[i].iter_mut().zip(&e).zip(&frame.deriv[i]) {
            *d = e * s;
        }
        de_da[i] = e;
    }
    for (index, b) in net.blocks.iter().enumerate() {
        if with_tensor[index] {
            continue;
        }
        let gradient = &mut gradient[b.offset..b.offset + b.len()];
        let source: &[f32] = match b.source {
            Source::Layer(k) => &frame.act[k],
            Source::Previous(q) => &prev.act[q],
            Source::Bias => &[1.0],
        };
        for (row, &d) in gradient.chunks_exact_mut(b.cols).zip(&delta[b.to]) {
            row.iter_mut().zip(source).for_each(|(g, &a)| *g = d * a);
        }
    }
}

/// `CPURNN::updateHistory` for one block: every dependent layer's tensor, in increasing order.
fn update_history(net: &Network, block: &Block, tensors: &mut BlockTensors, prev: &Frame, frame: &Frame) {
    let graph = &net.graph;
    let p = block.len();
    let source: &[f32] = match block.source {
        Source::Layer(n) => &frame.act[n],
        Source::Previous(n) => &prev.act[n],
        Source::Bias => &[1.0],
    };
    for i in 1..graph.layers.len() {
        if !tensors.dependents[i] {
            continue;
        }
        let mut out = std::mem::take(&mut tensors.current[i]);
        let mut terms = Vec::new();
        for c in net.blocks_into(i) {
            match c.source {
                // The input layer's sensitivity is zero (no weight feeds it).
                Source::Layer(k) if k > 0 && tensors.dependents[k] => terms.push(Term { a: net.block_values(c), k: c.cols, b: &tensors.current[k] }),
                Source::Previous(q) if q > 0 && tensors.dependents[q] => terms.push(Term { a: net.block_values(c), k: c.cols, b: &tensors.previous[q] }),
                _ => {}
            }
        }
        let deriv = &frame.deriv[i];
        let own = i == block.to;
        sum_of_products(graph.layers[i], p, &terms, &mut out, |tile: &mut Tile| {
            if own {
                // δ_{i,m} δ_{j,s} a^n_t: column s·cols + t of row s.
                let c0 = tile.c0;
                for col in c0..c0 + tile.width {
                    let (s, t) = (col / block.cols, col % block.cols);
                    tile.row(s)[col - c0] += source[t];
                }
            }
            for (j, &d) in deriv.iter().enumerate() {
                tile.row(j).iter_mut().for_each(|x| *x *= d);
            }
        });
        tensors.current[i] = out;
    }
}
