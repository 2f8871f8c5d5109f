//! L-BFGS's seam to where its vectors live (issue 17): the host's `f64` vectors
//! ([`HostVectors`]) or the device's `f32` buffers (`gpu::lbfgs::DeviceVectors`), so that
//! [`Lbfgs`](super::lbfgs::Lbfgs) and the strong-Wolfe line search are written once.
//!
//! The algorithm sees vectors only through a few operations: `a + c·b` and `c·b`, `y += a`,
//! copies, the two-loop recursion over the correction pairs as one operation, and four
//! reductions (`aᵀb`, `Σ|aᵢ|`, `max|aᵢ|`, the count of NaN/Inf). A reduction answers a
//! [`LbfgsVectors::Scalar`] whose value comes with the next [`LbfgsVectors::read`]: on the host
//! the values are there at once; a device records the work and reads back only the scalars
//! asked for, all in one read-back. An [`Evaluator`] evaluates `f` and `∇f` at a point of the
//! space and reads its scalars with `f` (a device: one submission, one read-back per trial of
//! the line search).
//!
//! [`HostVectors`] computes every operation exactly as the host L-BFGS did before the seam (the
//! same expressions, in the same order), so its iterates are bit for bit those of
//! tests/autoencoder_lbfgs.rs's reference.

use super::lbfgs::Memory;
use super::stepwise::AsyncObjective;
use super::wolfe::dot;

/// The device that holds the vectors stopped answering (the reason): the iteration in flight
/// is abandoned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost(pub String);

/// Where L-BFGS keeps its vectors, and the operations it does on them.
#[allow(async_fn_in_trait)]
pub trait LbfgsVectors {
    /// A vector of the problem's dimension.
    type Vector;
    /// A scalar reduced from vectors, whose value [`Self::read`] gives.
    type Scalar: Copy;

    /// A vector to write into (its contents are unspecified until written).
    fn vector(&mut self) -> Self::Vector;
    /// The vector an [`Evaluator`] evaluates at (a device's cost reads its parameters there).
    fn point(&mut self) -> Self::Vector;
    /// `out = a + c·b`, or `out = c·b` without `a`.
    fn combine(&mut self, a: Option<&Self::Vector>, c: f64, b: &Self::Vector, out: &mut Self::Vector);
    /// `y = y + a`.
    fn add(&mut self, a: &Self::Vector, y: &mut Self::Vector);
    fn copy(&mut self, a: &Self::Vector, out: &mut Self::Vector);
    /// `aᵀb`.
    fn dot(&mut self, a: &Self::Vector, b: &Self::Vector) -> Self::Scalar;
    /// `Σ|aᵢ|`.
    fn l1(&mut self, a: &Self::Vector) -> Self::Scalar;
    /// `max|aᵢ|`.
    fn max_abs(&mut self, a: &Self::Vector) -> Self::Scalar;
    /// How many of `a`'s entries are NaN or infinite.
    fn non_finite(&mut self, a: &Self::Vector) -> Self::Scalar;
    /// The values of `scalars`, once everything asked before is done.
    async fn read(&mut self, scalars: &[Self::Scalar]) -> Result<Vec<f64>, Lost>;
    /// Adds the pair `(s, y)` with `yᵀs` and `yᵀy` to the memory (the caller has checked the
    /// curvature: [`accepts_pair`]); the memory may keep the vectors themselves and hand back
    /// others to write the next pair into.
    fn push_pair(&mut self, s: &mut Self::Vector, y: &mut Self::Vector, ys: f64, yy: f64);
    /// `out = −H·gradient` by the two-loop recursion over the memory.
    fn two_loop(&mut self, gradient: &Self::Vector, out: &mut Self::Vector);
    /// Pairs the memory holds at most.
    fn memory_capacity(&self) -> usize;
}

/// minFunc's `lbfgsUpdate`: a pair is kept only where `yᵀs > 10⁻¹⁰`.
pub fn accepts_pair(ys: f64) -> bool {
    !(ys.is_nan() || ys <= 1e-10)
}

/// Evaluates `f` and `∇f` at points of a space `S`.
#[allow(async_fn_in_trait)]
pub trait Evaluator<S: LbfgsVectors + ?Sized> {
    /// `f` at `point`, `∇f` there written into `gradient`, and the values of the scalars that
    /// `then` asks for from the gradient (read with `f`). A failed evaluation answers NaN.
    async fn evaluate<F: FnOnce(&mut S, &S::Vector) -> Vec<S::Scalar>>(&mut self, space: &mut S, point: &S::Vector, gradient: &mut S::Vector, then: F) -> (f64, Vec<f64>);
    /// Whether the evaluator can no longer evaluate at all (a lost device): see
    /// [`AsyncObjective::interrupted`].
    fn interrupted(&self) -> bool;
}

/// The host's vectors: `f64`, every operation done at once, the pairs in a [`Memory`].
pub struct HostVectors {
    len: usize,
    memory: Memory,
}

impl HostVectors {
    pub fn new(len: usize, memory: usize) -> HostVectors {
        HostVectors { len, memory: Memory::new(memory) }
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }
}

impl LbfgsVectors for HostVectors {
    type Vector = Vec<f64>;
    type Scalar = f64;

    fn vector(&mut self) -> Vec<f64> {
        vec![0.0; self.len]
    }

    fn point(&mut self) -> Vec<f64> {
        Vec::with_capacity(self.len)
    }

    fn combine(&mut self, a: Option<&Vec<f64>>, c: f64, b: &Vec<f64>, out: &mut Vec<f64>) {
        out.clear();
        match a {
            Some(a) => out.extend(a.iter().zip(b).map(|(a, b)| a + c * b)),
            None => out.extend(b.iter().map(|b| c * b)),
        }
    }

    fn add(&mut self, a: &Vec<f64>, y: &mut Vec<f64>) {
        y.iter_mut().zip(a).for_each(|(y, a)| *y += a);
    }

    fn copy(&mut self, a: &Vec<f64>, out: &mut Vec<f64>) {
        out.clear();
        out.extend_from_slice(a);
    }

    fn dot(&mut self, a: &Vec<f64>, b: &Vec<f64>) -> f64 {
        dot(a, b)
    }

    fn l1(&mut self, a: &Vec<f64>) -> f64 {
        a.iter().map(|x| x.abs()).sum()
    }

    fn max_abs(&mut self, a: &Vec<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, x| m.max(x.abs()))
    }

    fn non_finite(&mut self, a: &Vec<f64>) -> f64 {
        a.iter().filter(|x| !x.is_finite()).count() as f64
    }

    async fn read(&mut self, scalars: &[f64]) -> Result<Vec<f64>, Lost> {
        Ok(scalars.to_vec())
    }

    fn push_pair(&mut self, s: &mut Vec<f64>, y: &mut Vec<f64>, ys: f64, yy: f64) {
        self.memory.push_accepted(s, y, ys, yy);
    }

    fn two_loop(&mut self, gradient: &Vec<f64>, out: &mut Vec<f64>) {
        self.memory.direction(gradient, out);
    }

    fn memory_capacity(&self) -> usize {
        self.memory.capacity()
    }
}

/// Every [`AsyncObjective`] (the CPU's cost, the device's cost with the host's L-BFGS, a
/// [`Blocking`](super::stepwise::Blocking) sync objective) evaluates on the host's vectors.
impl<O: AsyncObjective + ?Sized> Evaluator<HostVectors> for O {
    async fn evaluate<F: FnOnce(&mut HostVectors, &Vec<f64>) -> Vec<f64>>(&mut self, space: &mut HostVectors, point: &Vec<f64>, gradient: &mut Vec<f64>, then: F) -> (f64, Vec<f64>) {
        let value = self.value_and_gradient(point, gradient).await;
        let scalars = then(space, gradient);
        (value, scalars)
    }

    fn interrupted(&self) -> bool {
        AsyncObjective::interrupted(self)
    }
}
