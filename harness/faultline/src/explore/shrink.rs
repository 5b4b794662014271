//! Shrinking a failing variant to the smallest set of perturbations that still fails: delta
//! debugging's reduction at its finest granularity (Zeller and Hildebrandt's ddmin, one element
//! at a time): drop one perturbation and keep the smaller set when it still fails, until no
//! single drop fails. The empty set is never tried: it is the unperturbed run, which passed.

use std::future::Future;

/// The outcome of shrinking.
#[derive(Debug, PartialEq)]
pub struct Shrunk<P, R> {
    /// The smallest failing set found (the original set when no drop still failed).
    pub set: Vec<P>,
    /// What the oracle gave for `set` when it is smaller than the original (the original's own
    /// result stands otherwise).
    pub result: Option<R>,
    /// Runs spent: each tried subset is one.
    pub runs: usize,
}

/// Shrink `set`, which failed. `fails` runs a subset and gives `Some` of its result when that
/// still fails, `None` when it passes.
pub async fn shrink<P, R, F, Fut>(set: Vec<P>, mut fails: F) -> Shrunk<P, R>
where
    P: Clone,
    F: FnMut(Vec<P>) -> Fut,
    Fut: Future<Output = Option<R>>,
{
    let mut current = set;
    let mut result = None;
    let mut runs = 0;
    'smaller: while current.len() > 1 {
        for i in 0..current.len() {
            let mut candidate = current.clone();
            candidate.remove(i);
            runs += 1;
            if let Some(r) = fails(candidate.clone()).await {
                current = candidate;
                result = Some(r);
                continue 'smaller;
            }
        }
        break;
    }
    Shrunk {
        set: current,
        result,
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A fake oracle: a set fails when it contains every element of one of `causes`.
    fn oracle(causes: &[&str]) -> impl Fn(&[char]) -> bool {
        let causes: Vec<Vec<char>> = causes.iter().map(|c| c.chars().collect()).collect();
        move |set: &[char]| causes.iter().any(|c| c.iter().all(|x| set.contains(x)))
    }

    #[test]
    fn shrinks_to_the_smallest_failing_set_table() {
        // (the failing set, what makes a set fail, the expected result, the expected runs)
        let table: &[(&str, &[&str], &str, usize)] = &[
            // a pair whose first member fails alone: dropping it passes, dropping the other fails
            ("ab", &["a"], "a", 2),
            // the second member alone: dropped first, found at once
            ("ab", &["b"], "b", 1),
            // both needed: neither drop fails, the pair is minimal
            ("ab", &["ab"], "ab", 2),
            // a single is already minimal: nothing is run
            ("a", &["a"], "a", 0),
            // three, one culprit in the middle: drop a (fails: bc), then drop b (passes), drop c
            ("abc", &["b"], "b", 3),
            // three, two needed together: drop a (fails: bc), then neither drop of bc fails
            ("abc", &["bc"], "bc", 3),
            // either of two causes: the first drop that still fails wins
            ("abc", &["a", "c"], "c", 2),
        ];
        for (set, causes, want, runs) in table {
            let fails = oracle(causes);
            let tried = RefCell::new(vec![]);
            let out = futures::executor::block_on(shrink(set.chars().collect(), |s: Vec<char>| {
                tried.borrow_mut().push(s.iter().collect::<String>());
                let r = fails(&s).then(|| s.iter().collect::<String>());
                async move { r }
            }));
            let got: String = out.set.iter().collect();
            assert_eq!(&got, want, "{set} with causes {causes:?}: tried {tried:?}");
            assert_eq!(
                out.runs, *runs,
                "{set} with causes {causes:?}: tried {tried:?}"
            );
            assert_eq!(out.runs, tried.borrow().len());
            // The result is the shrunk set's own, and only when it is smaller.
            let smaller = want.len() < set.len();
            assert_eq!(out.result, smaller.then(|| want.to_string()), "{set}");
            assert!(
                !tried.borrow().iter().any(String::is_empty),
                "never the empty set"
            );
        }
    }
}
