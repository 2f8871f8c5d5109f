//! The layer/edge graph of a recurrent net (Moore 2009, §2.2 and §3.1).
//!
//! Layer 0 is the input (its activations are the input vector), the last layer is the output
//! `y`, every other layer holds tanh units. A feed-forward edge `k → i` (`w^{i,k}`) carries
//! `a^k(τ)` into `net^i(τ)` and must go upwards (`k < i`, Moore's `p_{i,k} < i`, which keeps the
//! graph acyclic within a time step); a recurrent edge `q → i` (`μ^{i,q}`) carries the
//! previous step's `a^q(τ − 1)` and may join any two layers (`q_{i,k}` is free). With `biases`,
//! every computing layer has a bias vector (Moore's optional bias row of a matrix: a weight
//! from a signal that is always 1).
//!
//! The parameters are one flat vector of blocks: one `n_i × n_k` matrix per edge, in the
//! spec's edge order, then one `n_i × 1` bias per computing layer. A matrix is row-major with
//! the destination unit as the row (Moore's `w_{j,l}`: row `j` of layer `i`, column `l` of
//! layer `k`).

use super::error::RecurrentError;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// `a^from(τ)` into `net^to(τ)`; `from < to`.
    FeedForward,
    /// `a^from(τ − 1)` into `net^to(τ)`; any two layers.
    Recurrent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeSpec {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
}

impl EdgeSpec {
    pub fn feed_forward(from: usize, to: usize) -> Self {
        EdgeSpec { from, to, kind: EdgeKind::FeedForward }
    }

    pub fn recurrent(from: usize, to: usize) -> Self {
        EdgeSpec { from, to, kind: EdgeKind::Recurrent }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphSpec {
    /// Units per layer: `layers[0]` inputs, the last the outputs.
    pub layers: Vec<usize>,
    pub edges: Vec<EdgeSpec>,
    /// A bias vector on every computing layer.
    pub biases: bool,
}

/// The named graphs of `--preset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// input → hidden → output.
    FeedForward,
    /// Elman (1990): the feed-forward net plus hidden → hidden from the previous step.
    Elman,
    /// Jordan (1986): the feed-forward net plus output → hidden from the previous step.
    Jordan,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::FeedForward => "feedforward",
            Preset::Elman => "elman",
            Preset::Jordan => "jordan",
        }
    }

    /// The preset's graph with `inputs`, `hidden` and `outputs` units, biases on.
    pub fn graph(self, inputs: usize, hidden: usize, outputs: usize) -> GraphSpec {
        let mut edges = vec![EdgeSpec::feed_forward(0, 1), EdgeSpec::feed_forward(1, 2)];
        match self {
            Preset::FeedForward => {}
            Preset::Elman => edges.push(EdgeSpec::recurrent(1, 1)),
            Preset::Jordan => edges.push(EdgeSpec::recurrent(2, 1)),
        }
        GraphSpec { layers: vec![inputs, hidden, outputs], edges, biases: true }
    }
}

/// Where a parameter block's signal comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `a^k(τ)` through a feed-forward edge.
    Layer(usize),
    /// `a^q(τ − 1)` through a recurrent edge.
    Previous(usize),
    /// The constant 1 of a bias.
    Bias,
}

/// One weight matrix (or bias) of the flat parameter vector: `rows × cols` at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// The layer it feeds (`m` in Moore's `w^{m,n}`).
    pub to: usize,
    pub source: Source,
    pub rows: usize,
    pub cols: usize,
    pub offset: usize,
}

impl Block {
    pub fn len(&self) -> usize {
        self.rows * self.cols
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A name for messages and files: `w[1←0]`, `μ[1←1]`, `b[2]`.
    pub fn name(&self) -> String {
        match self.source {
            Source::Layer(k) => format!("w[{}←{k}]", self.to),
            Source::Previous(q) => format!("μ[{}←{q}]", self.to),
            Source::Bias => format!("b[{}]", self.to),
        }
    }
}

/// The most units a layer may have (a sensitivity tensor has `n³`–`n⁴` entries).
pub const MAX_UNITS: usize = 65_536;
/// The most parameters a graph may have (1 GiB of f32; counted in u64, so a spec cannot
/// overflow a 32-bit `usize` before it is refused).
pub const MAX_PARAMETERS: u64 = 1 << 28;

impl GraphSpec {
    pub fn output(&self) -> usize {
        self.layers.len() - 1
    }

    /// Checks the spec; an error names the field (`layers[1]`, `edges[2].to`).
    pub fn validate(&self) -> Result<(), RecurrentError> {
        let count = self.layers.len();
        if count < 2 {
            return Err(RecurrentError::new("layers", format!("has {count} layers; expected at least 2 (an input and an output layer)")));
        }
        for (i, &units) in self.layers.iter().enumerate() {
            if units == 0 || units > MAX_UNITS {
                return Err(RecurrentError::new(format!("layers[{i}]"), format!("is {units} units; expected 1 to {MAX_UNITS}")));
            }
        }
        for (e, edge) in self.edges.iter().enumerate() {
            if edge.from >= count {
                return Err(RecurrentError::new(format!("edges[{e}].from"), format!("is layer {}; the graph has layers 0 to {} only", edge.from, count - 1)));
            }
            if edge.to >= count {
                return Err(RecurrentError::new(format!("edges[{e}].to"), format!("is layer {}; the graph has layers 0 to {} only", edge.to, count - 1)));
            }
            if edge.to == 0 {
                return Err(RecurrentError::new(format!("edges[{e}].to"), "is layer 0, the input; expected a computing layer (1 or above)"));
            }
            if edge.kind == EdgeKind::FeedForward && edge.from >= edge.to {
                return Err(RecurrentError::new(
                    format!("edges[{e}]"),
                    format!("is a feed-forward edge from layer {} to layer {}; expected from < to (use a recurrent edge to go back)", edge.from, edge.to),
                ));
            }
            if let Some(d) = self.edges[..e].iter().position(|other| other == edge) {
                return Err(RecurrentError::new(format!("edges[{e}]"), format!("repeats edges[{d}]")));
            }
        }
        let parameters: u64 = self.edges.iter().map(|e| self.layers[e.to] as u64 * self.layers[e.from] as u64).sum::<u64>() + if self.biases { self.layers[1..].iter().map(|&n| n as u64).sum() } else { 0 };
        if parameters > MAX_PARAMETERS {
            return Err(RecurrentError::new("layers", format!("would give {parameters} parameters; at most {MAX_PARAMETERS} are allowed")));
        }
        for i in 1..count {
            if !self.edges.iter().any(|edge| edge.to == i) {
                return Err(RecurrentError::new(format!("layers[{i}]"), "has no incoming edge; expected at least one (it would be constant)"));
            }
        }
        Ok(())
    }

    /// The parameter blocks in the flat vector's order.
    pub fn blocks(&self) -> Vec<Block> {
        let mut blocks = Vec::new();
        let mut offset = 0;
        let mut push = |to: usize, source: Source, cols: usize| {
            let block = Block { to, source, rows: self.layers[to], cols, offset };
            offset += block.len();
            blocks.push(block);
        };
        for edge in &self.edges {
            match edge.kind {
                EdgeKind::FeedForward => push(edge.to, Source::Layer(edge.from), self.layers[edge.from]),
                EdgeKind::Recurrent => push(edge.to, Source::Previous(edge.from), self.layers[edge.from]),
            }
        }
        if self.biases {
            for i in 1..self.layers.len() {
                push(i, Source::Bias, 1);
            }
        }
        blocks
    }

    pub fn parameter_count(&self) -> usize {
        self.blocks().iter().map(Block::len).sum()
    }

    /// Layers that are the source of a recurrent edge (their previous state is read).
    pub fn recurrent_sources(&self) -> Vec<bool> {
        let mut sources = vec![false; self.layers.len()];
        for edge in self.edges.iter().filter(|e| e.kind == EdgeKind::Recurrent) {
            sources[edge.from] = true;
        }
        sources
    }

    /// Layers reachable from `m` along edges of the given kinds (`m` included).
    fn reachable(&self, m: usize, recurrent_too: bool) -> Vec<bool> {
        let mut seen = vec![false; self.layers.len()];
        let mut stack = vec![m];
        seen[m] = true;
        while let Some(at) = stack.pop() {
            for edge in self.edges.iter().filter(|e| e.from == at && (recurrent_too || e.kind == EdgeKind::FeedForward)) {
                if !seen[edge.to] {
                    seen[edge.to] = true;
                    stack.push(edge.to);
                }
            }
        }
        seen
    }

    /// Layers whose activations may depend on the parameters feeding layer `m`, now or at a
    /// later step: those reachable from `m` along any edges. Only these get sensitivity
    /// tensors (the others' are identically zero).
    pub fn dependents(&self, m: usize) -> Vec<bool> {
        self.reachable(m, true)
    }

    /// Moore's ∂E/∂net optimisation (§5.10), per destination layer: `true` where no path from
    /// layer `m` to the output uses a recurrent edge, so `∂y(τ)/∂w^{m,·}` has no terms from
    /// earlier steps and plain back-propagation within the step gives the exact gradient.
    /// A path uses a recurrent edge when its first one, `x → z`, starts at a layer `x` that
    /// `m` reaches by feed-forward edges and ends at a layer `z` from which the output is
    /// reachable (along any edges).
    pub fn shortcut_layers(&self) -> Vec<bool> {
        let count = self.layers.len();
        let out = self.output();
        let reaches_output: Vec<bool> = (0..count).map(|z| self.reachable(z, true)[out]).collect();
        (0..count)
            .map(|m| {
                let below = self.reachable(m, false);
                m > 0 && !self.edges.iter().any(|e| e.kind == EdgeKind::Recurrent && below[e.from] && reaches_output[e.to])
            })
            .collect()
    }
}
