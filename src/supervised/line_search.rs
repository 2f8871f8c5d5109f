//! Minimising a function along a line, `φ(t) = f(x + t·d)` for `t ≥ 0`, where `d` points
//! downhill: bracket a minimum, then refine it by Brent's method (parabolic steps guarded
//! by golden sections; Brent 1973, as in Numerical Recipes' `brent`). Only values are
//! needed, so for a net each trial costs one forward pass, not a backward one.

/// The golden ratio: how far each bracketing step reaches beyond the last.
const GOLDEN: f64 = 1.618_034;
/// 1 − 1/golden ratio: Brent's golden-section fraction.
const GOLDEN_SECTION: f64 = 0.381_966;
/// Bracketing gives up after this many expansions or contractions.
const MAX_BRACKET_STEPS: usize = 60;

/// Where the line search stopped: the step and the function value there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineMinimum {
    pub step: f64,
    pub value: f64,
    /// Function evaluations used.
    pub evaluations: usize,
}

/// Three steps `a < b < c` with `φ(b)` below both `φ(a)` and `φ(c)`.
struct Bracket {
    a: f64,
    b: f64,
    c: f64,
    value_b: f64,
}

/// Minimises `phi` on `t ≥ 0` given `φ(0) = value_0` and `φ'(0) = slope_0 < 0`, starting
/// with a trial step `first_step`. `tolerance` is relative to the step. Returns `None` when
/// no step lowers φ (the direction is not downhill at any resolvable scale).
pub fn minimise_along(phi: &mut dyn FnMut(f64) -> f64, value_0: f64, slope_0: f64, first_step: f64, tolerance: f64, max_evaluations: usize) -> Option<LineMinimum> {
    let mut evaluations = 0;
    let mut counted = |t: f64| {
        evaluations += 1;
        phi(t)
    };
    let bracket = bracket(&mut counted, value_0, slope_0, first_step)?;
    let minimum = brent(&mut counted, bracket, tolerance, max_evaluations);
    Some(LineMinimum { evaluations, ..minimum })
}

/// Finds a bracket: if the trial step already rises above φ(0), shrinks it (to the minimum
/// of the parabola through φ(0), φ'(0) and φ(t), kept within [0.1t, 0.5t]) until a lower
/// point appears; otherwise expands by the golden ratio until φ rises again.
fn bracket(phi: &mut dyn FnMut(f64) -> f64, value_0: f64, slope_0: f64, first_step: f64) -> Option<Bracket> {
    let mut t = first_step;
    let mut value_t = phi(t);
    if value_t.is_nan() || value_t >= value_0 {
        let mut high = t;
        let mut value_high = value_t;
        for _ in 0..MAX_BRACKET_STEPS {
            let curvature = value_high - value_0 - slope_0 * high;
            let parabola = if curvature.is_finite() && curvature > 0.0 { -slope_0 * high * high / (2.0 * curvature) } else { 0.1 * high };
            t = parabola.clamp(0.1 * high, 0.5 * high);
            value_t = phi(t);
            if value_t < value_0 {
                return Some(Bracket { a: 0.0, b: t, c: high, value_b: value_t });
            }
            high = t;
            value_high = value_t;
        }
        return None;
    }
    let (mut a, mut b, mut value_b) = (0.0, t, value_t);
    for _ in 0..MAX_BRACKET_STEPS {
        let c = b + GOLDEN * (b - a);
        let value_c = phi(c);
        if value_c.is_nan() || value_c >= value_b {
            return Some(Bracket { a, b, c, value_b });
        }
        (a, b, value_b) = (b, c, value_c);
    }
    // Still falling after 60 golden expansions: take the farthest point reached.
    Some(Bracket { a, b, c: b + GOLDEN * (b - a), value_b })
}

/// Brent's method inside a bracket; returns the lowest point found.
fn brent(phi: &mut dyn FnMut(f64) -> f64, bracket: Bracket, tolerance: f64, max_evaluations: usize) -> LineMinimum {
    let Bracket { a: mut low, b, c: mut high, value_b } = bracket;
    // Absolute floor of the tolerance, relative to the bracket, for minima at tiny steps.
    let floor = 1e-12 * high;
    let (mut x, mut w, mut v) = (b, b, b);
    let (mut fx, mut fw, mut fv) = (value_b, value_b, value_b);
    // `d` is the last step, `e` the one before: a parabolic step must be smaller than
    // half of `e`, or Brent falls back to a golden section.
    let (mut d, mut e) = (0.0f64, 0.0f64);
    for _ in 0..max_evaluations.max(1) {
        let middle = 0.5 * (low + high);
        let tol1 = tolerance * x.abs() + floor;
        let tol2 = 2.0 * tol1;
        if (x - middle).abs() <= tol2 - 0.5 * (high - low) {
            break;
        }
        let mut golden = true;
        if e.abs() > tol1 {
            let r = (x - w) * (fx - fv);
            let mut q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            let previous = e;
            if p.abs() < (0.5 * q * previous).abs() && p > q * (low - x) && p < q * (high - x) {
                e = d;
                d = p / q;
                let u = x + d;
                if u - low < tol2 || high - u < tol2 {
                    d = tol1.copysign(middle - x);
                }
                golden = false;
            }
        }
        if golden {
            e = if x >= middle { low - x } else { high - x };
            d = GOLDEN_SECTION * e;
        }
        let u = if d.abs() >= tol1 { x + d } else { x + tol1.copysign(d) };
        let fu = phi(u);
        if fu <= fx {
            if u >= x {
                low = x;
            } else {
                high = x;
            }
            (v, fv, w, fw, x, fx) = (w, fw, x, fx, u, fu);
        } else {
            if u < x {
                low = u;
            } else {
                high = u;
            }
            if fu <= fw || w == x {
                (v, fv, w, fw) = (w, fw, u, fu);
            } else if fu <= fv || v == x || v == w {
                (v, fv) = (u, fu);
            }
        }
    }
    LineMinimum { step: x, value: fx, evaluations: 0 }
}

#[cfg(test)]
mod tests {
    use super::minimise_along;

    #[test]
    fn finds_the_minimum_of_a_parabola_from_too_short_and_too_long_steps() {
        for first in [1e-4, 0.3, 2.0, 50.0, 1e4] {
            let mut phi = |t: f64| (t - 2.5).powi(2) + 1.0;
            let found = minimise_along(&mut phi, 7.25, -5.0, first, 1e-8, 100).expect("downhill");
            assert!((found.step - 2.5).abs() < 1e-6, "first step {first}: {found:?}");
            assert!((found.value - 1.0).abs() < 1e-10);
        }
    }

    #[test]
    fn an_uphill_direction_gives_none() {
        let mut phi = |t: f64| t * t + t;
        assert!(minimise_along(&mut phi, 0.0, -1.0, 1.0, 1e-6, 50).is_none());
    }
}
