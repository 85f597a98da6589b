//! The router's model: a multinomial logistic regression over sparse
//! feature vectors, trained when the runtime starts by plain stochastic
//! gradient descent (a fixed number of passes, a fixed shuffle: the same
//! configuration always learns the same weights). Chosen over the nearest
//! example because it generalises better to requests worded in ways no
//! example was (docs/ROUTING.md: leave-one-round-out, 0.93 against 0.88).

/// Passes over the examples.
const EPOCHS: usize = 40;
/// Step size.
const RATE: f32 = 0.5;
/// Weight decay per pass (L2).
const DECAY: f32 = 1e-4;
/// A class whose error is smaller than this is not updated for an example.
const SETTLED: f32 = 1e-4;

/// One sparse vector: (feature id, value), ids ascending.
pub(crate) type Sparse = [(u32, f32)];

/// Learned weights: one row of `classes` weights per feature, and a bias per class.
pub(crate) struct Softmax {
    classes: usize,
    weights: Vec<f32>,
    bias: Vec<f32>,
}

/// A small deterministic shuffle (xorshift64), so that training is repeatable.
fn shuffle(order: &mut [usize]) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

impl Softmax {
    /// Learns from `examples` (class, vector) over `features` feature ids.
    pub(crate) fn train(features: usize, classes: usize, examples: &[(usize, &Sparse)]) -> Self {
        let mut m = Self { classes, weights: vec![0.0; features * classes], bias: vec![0.0; classes] };
        if classes == 0 {
            return m;
        }
        let mut order: Vec<usize> = (0..examples.len()).collect();
        let mut p = vec![0.0; classes];
        let keep = 1.0 - RATE * DECAY;
        // Plain loops over slices, no iterator adapters: the router is learnt
        // at every start, and an unoptimized (test) build pays a call per
        // adapter step, ~10x the time of these loops.
        for _ in 0..EPOCHS {
            shuffle(&mut order);
            for &i in &order {
                let (class, x) = examples[i];
                m.fill(x, &mut p);
                let (weights, bias) = (m.weights.as_mut_slice(), m.bias.as_mut_slice());
                let mut c = 0;
                while c < classes {
                    let g = p[c] - if c == class { 1.0 } else { 0.0 };
                    if g.abs() >= SETTLED {
                        bias[c] -= RATE * g;
                        let mut k = 0;
                        while k < x.len() {
                            let (id, v) = x[k];
                            weights[id as usize * classes + c] -= RATE * g * v;
                            k += 1;
                        }
                    }
                    c += 1;
                }
            }
            let weights = m.weights.as_mut_slice();
            let mut k = 0;
            while k < weights.len() {
                weights[k] *= keep;
                k += 1;
            }
        }
        m
    }

    /// The probability of each class for `x`, into `p`.
    fn fill(&self, x: &Sparse, p: &mut [f32]) {
        p.copy_from_slice(&self.bias);
        let (weights, classes) = (self.weights.as_slice(), self.classes);
        let mut k = 0;
        while k < x.len() {
            let (id, v) = x[k];
            let base = id as usize * classes;
            let mut c = 0;
            while c < classes {
                p[c] += weights[base + c] * v;
                c += 1;
            }
            k += 1;
        }
        let max = p.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        p.iter_mut().for_each(|z| *z = (*z - max).exp());
        let sum: f32 = p.iter().sum();
        p.iter_mut().for_each(|z| *z /= sum);
    }

    /// The probability of each class for `x`; none for a vector with no
    /// known feature (nothing to go on is not the most common class).
    pub(crate) fn probabilities(&self, x: &Sparse) -> Option<Vec<f32>> {
        if x.is_empty() || self.classes == 0 {
            return None;
        }
        let mut p = vec![0.0; self.classes];
        self.fill(x, &mut p);
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_learns_which_features_mark_which_class_and_says_nothing_without_features() {
        let (a, b, both): (&Sparse, &Sparse, &Sparse) = (&[(0, 1.0)], &[(1, 1.0)], &[(0, 0.7), (2, 0.7)]);
        let m = Softmax::train(3, 2, &[(0, a), (1, b), (0, both)]);
        let pa = m.probabilities(&[(0, 1.0)]).unwrap();
        let pb = m.probabilities(&[(1, 1.0)]).unwrap();
        assert!(pa[0] > 0.9 && pb[1] > 0.9, "{pa:?} {pb:?}");
        assert!(m.probabilities(&[]).is_none());
        // the same examples learn the same weights
        let again = Softmax::train(3, 2, &[(0, a), (1, b), (0, both)]);
        assert_eq!(again.probabilities(&[(2, 1.0)]), m.probabilities(&[(2, 1.0)]));
    }
}
