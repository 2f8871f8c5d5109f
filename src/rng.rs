//! Counter-based random numbers (Philox4x32-10, Salmon et al. 2011).
//!
//! Every random draw in training is a pure function of (seed, step, purpose, index), so
//! results do not depend on thread scheduling, and the WGSL kernels can reproduce the
//! CPU reference stream bit for bit (see `shaders/philox.wgsl`, issue 4).
//! Sequential needs that have no parity requirement (shuffles, initial weights) use
//! `rand_chacha::ChaCha8Rng`, seeded from the same seed.

const PHILOX_M0: u32 = 0xD251_1F53;
const PHILOX_M1: u32 = 0xCD9E_8D57;
const PHILOX_W0: u32 = 0x9E37_79B9;
const PHILOX_W1: u32 = 0xBB67_AE85;

#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let product = a as u64 * b as u64;
    ((product >> 32) as u32, product as u32)
}

/// The Philox4x32 block function with 10 rounds.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(PHILOX_W0);
            k[1] = k[1].wrapping_add(PHILOX_W1);
        }
        let (hi0, lo0) = mulhilo(PHILOX_M0, c[0]);
        let (hi1, lo1) = mulhilo(PHILOX_M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// `philox4x32_10` on `N` counters side by side: word `w` of block `l` is `counters[w][l]`.
/// The rounds are the scalar function's, written over arrays so that the compiler maps them onto
/// vector registers (the 32×32→64-bit products become `pmuludq`), for the CPU backend's bulk
/// sampling; the results are the scalar function's bit for bit (tested below).
#[inline(always)]
pub fn philox4x32_10_lanes<const N: usize>(counters: [[u32; N]; 4], key: [u32; 2]) -> [[u32; N]; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = counters;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(PHILOX_W0);
            k[1] = k[1].wrapping_add(PHILOX_W1);
        }
        for l in 0..N {
            let (hi0, lo0) = mulhilo(PHILOX_M0, c0[l]);
            let (hi1, lo1) = mulhilo(PHILOX_M1, c2[l]);
            (c0[l], c1[l], c2[l], c3[l]) = (hi1 ^ c1[l] ^ k[0], lo1, hi0 ^ c3[l] ^ k[1], lo0);
        }
    }
    [c0, c1, c2, c3]
}

/// What a stream of draws is used for; keeps streams of one step independent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Purpose {
    HiddenSample = 1,
    VisibleSample = 2,
    GibbsHidden = 3,
    GibbsVisible = 4,
    /// Binarising the propagated input of a higher layer ("greedy mean field" off).
    InputSample = 5,
    /// The negative chain's hidden samples after the first step of CD-k / PCD.
    ChainHidden = 6,
    /// Random top-layer states that start generative chains.
    RandomStart = 7,
    /// Initial weights drawn from Philox (the sparse autoencoder's); the step numbers the matrix.
    InitialWeights = 8,
    /// Which training cases to cut from the data (natural-image patches: image and position).
    DataSample = 9,
}

/// One independent stream of uniforms: element `i` of step `step` for `purpose`.
#[derive(Clone, Copy, Debug)]
pub struct RngStream {
    pub key: [u32; 2],
    pub step: u64,
    pub purpose: Purpose,
}

impl RngStream {
    pub fn new(seed: u64, step: u64, purpose: Purpose) -> Self {
        RngStream { key: [seed as u32, (seed >> 32) as u32], step, purpose }
    }

    /// Uniform in [0, 1) with 24 bits, exactly representable in f32 on CPU and GPU.
    pub fn uniform(&self, index: u64) -> f32 {
        let block = philox4x32_10(
            [(index >> 2) as u32, self.step as u32, (self.step >> 32) as u32, self.purpose as u32 | ((index >> 34) as u32) << 8],
            self.key,
        );
        (block[(index & 3) as usize] >> 8) as f32 * (1.0 / 16_777_216.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known-answer vectors from Random123's kat_vectors for philox4x32_10.
    #[test]
    fn philox_known_answers() {
        assert_eq!(philox4x32_10([0, 0, 0, 0], [0, 0]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
        assert_eq!(
            philox4x32_10([0xffffffff; 4], [0xffffffff; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn philox_lanes_are_the_scalar_blocks() {
        let key = [0xa409_3822, 0x299f_31d0];
        let counters: [[u32; 5]; 4] = std::array::from_fn(|w| std::array::from_fn(|l| (l as u32).wrapping_mul(0x9e37_79b9) ^ (w as u32) << 29 ^ 0xffff_fff0 * (l as u32 & 1)));
        let lanes = philox4x32_10_lanes(counters, key);
        for l in 0..5 {
            let expected = philox4x32_10([counters[0][l], counters[1][l], counters[2][l], counters[3][l]], key);
            assert_eq!([lanes[0][l], lanes[1][l], lanes[2][l], lanes[3][l]], expected, "lane {l}");
        }
    }

    #[test]
    fn uniforms_are_uniform() {
        let stream = RngStream::new(7, 3, Purpose::HiddenSample);
        let n = 100_000;
        let mean = (0..n).map(|i| stream.uniform(i) as f64).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "mean {mean}");
        let other = RngStream::new(7, 4, Purpose::HiddenSample);
        assert_ne!(stream.uniform(0), other.uniform(0));
    }
}
