//! Choosing cases. Held-out cases: chosen at random from a seed, stratified by class where
//! there are classes; the page's held-out split and the supervised stages' validation share
//! both come from here. Measured cases: an even spread through the data, the one choice of
//! every evaluation, monitor and report on the CPU and on the GPU.

use crate::model::Rbm;
use rand::seq::index::sample;

/// `round(fraction · n_cases)` case indices, ascending, chosen at random from `seed`. With
/// `classes` (one per case, below `n_classes`) every class gives its own share, within one
/// case: a data set stored class by class, or interleaved with a period, would otherwise be
/// held out unevenly by any choice that follows the order (every k-th case held out only zeros).
pub fn held_out_cases(n_cases: usize, classes: Option<(&[u32], usize)>, fraction: f64, seed: u64) -> Vec<usize> {
    let count = (fraction * n_cases as f64).round() as usize;
    let mut rng = Rbm::seeded_rng(seed);
    let mut held_out: Vec<usize> = match classes {
        Some((classes, n_classes)) if classes.len() == n_cases => {
            let mut members = vec![Vec::new(); n_classes];
            for (case, &class) in classes.iter().enumerate() {
                members[class as usize].push(case);
            }
            let sizes: Vec<usize> = members.iter().map(Vec::len).collect();
            members
                .iter()
                .zip(class_shares(&sizes, fraction, count))
                .flat_map(|(cases, share)| sample(&mut rng, cases.len(), share).into_iter().map(|k| cases[k]).collect::<Vec<_>>())
                .collect()
        }
        _ => sample(&mut rng, n_cases, count.min(n_cases)).into_vec(),
    };
    held_out.sort_unstable();
    held_out
}

/// At most `max_cases` case indices spread evenly through `0..n_cases` (all cases when fewer;
/// none when `n_cases` or `max_cases` is 0), so a quick measurement sees every part of a data
/// set that is ordered by class.
pub fn spread_cases(n_cases: usize, max_cases: usize) -> Vec<usize> {
    let n = n_cases.min(max_cases);
    (0..n).map(|k| k * n_cases / n).collect()
}

/// The cases of `0..n_cases` not in `held_out` (ascending), ascending.
pub fn complement(held_out: &[usize], n_cases: usize) -> Vec<usize> {
    let mut held_out = held_out.iter().peekable();
    (0..n_cases)
        .filter(|case| {
            if held_out.peek() == Some(&case) {
                held_out.next();
                false
            } else {
                true
            }
        })
        .collect()
}

/// Splits `total` (about `fraction` of all cases) over classes of `sizes` cases by largest
/// remainders: each class gets the floor or the ceiling of `fraction · size`, and the shares
/// add up to `total`.
fn class_shares(sizes: &[usize], fraction: f64, total: usize) -> Vec<usize> {
    let exact: Vec<f64> = sizes.iter().map(|&size| fraction * size as f64).collect();
    let mut shares: Vec<usize> = exact.iter().zip(sizes).map(|(share, &size)| (share.floor() as usize).min(size)).collect();
    let mut by_remainder: Vec<usize> = (0..sizes.len()).collect();
    // Stable: equal remainders go to the lower class first.
    by_remainder.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let mut missing = total.saturating_sub(shares.iter().sum());
    for class in by_remainder {
        if missing == 0 {
            break;
        }
        if shares[class] < sizes[class] {
            shares[class] += 1;
            missing -= 1;
        }
    }
    shares
}
