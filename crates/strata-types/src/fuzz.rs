//! Seeded mutation fuzzing for the never-panic tests of every parser fed by the network or a
//! drive (stable Rust, no compiler instrumentation).
//!
//! [`run`] starts from a corpus of valid inputs, derives inputs from them by byte-level
//! mutations (flips, overwrites with boundary values, insertions, deletions, duplicated runs,
//! truncation, splices of two corpus entries), feeds each to the parser and fails on the first
//! panic, printing the seed, the iteration and the input (hex) to replay. What a parser returns
//! is not judged here (each crate's unit tests do that); only that it returns.
//!
//! Iterations: `STRATA_FUZZ_ITERS` (default [`DEFAULT_ITERS`] per target, a bounded run for the
//! test command); `STRATA_FUZZ_SEED` picks the seed (default: fixed, so runs repeat). Long run:
//! `STRATA_FUZZ_ITERS=2000000 cargo test --release fuzz_`.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Inputs per target in the default (test command) run.
pub const DEFAULT_ITERS: u64 = 50_000;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: &[u8] = &[
    0, 1, 0x7f, 0x80, 0xff, b'0', b'9', b'-', b'=', b'&', b'<', b'>', b'/', b';', b',', b'\r', b'\n', b' ',
    b'%', b'"',
];

/// One input derived from the corpus.
fn mutate(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = corpus[rng.below(corpus.len())].clone();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let len = data.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(8);
                for _ in 0..n {
                    data.insert(i, INTERESTING[rng.below(INTERESTING.len())]);
                }
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(16));
                data.drain(i..i + n);
            }
            4 if len > 0 => {
                // Duplicate a run (grows counts and lengths).
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let run: Vec<u8> = data[i..i + n].to_vec();
                let at = rng.below(data.len() + 1);
                data.splice(at..at, run);
            }
            5 if len > 0 => data.truncate(rng.below(len)),
            6 => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(data.len() + 1);
                let from = rng.below(other.len() + 1);
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            _ if len > 0 => {
                // A numeric-looking run made huge or negative.
                let i = rng.below(len);
                let big: &[u8] =
                    [&b"18446744073709551616"[..], b"-1", b"4294967295", b"99999999999"][rng.below(4)];
                data.splice(i..i, big.iter().copied());
            }
            _ => data.push(rng.next() as u8),
        }
    }
    data
}

/// Feeds `iters` inputs derived from `corpus` to `parse`; panics (failing the test) with a
/// replayable report on the first input that makes `parse` panic.
pub fn run(name: &str, corpus: &[&[u8]], parse: impl Fn(&[u8])) {
    let iters = std::env::var("STRATA_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_ITERS);
    let seed = std::env::var("STRATA_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5742_a7a5_u64);
    let corpus: Vec<Vec<u8>> =
        if corpus.is_empty() { vec![Vec::new()] } else { corpus.iter().map(|c| c.to_vec()).collect() };
    // The corpus itself first.
    for input in &corpus {
        check(name, seed, None, input, &parse);
    }
    let mut rng = Rng(seed | 1);
    for i in 0..iters {
        let input = mutate(&mut rng, &corpus);
        check(name, seed, Some(i), &input, &parse);
    }
}

fn check(name: &str, seed: u64, iter: Option<u64>, input: &[u8], parse: &impl Fn(&[u8])) {
    if catch_unwind(AssertUnwindSafe(|| parse(input))).is_err() {
        let shown: String = input.iter().take(4096).map(|b| format!("{b:02x}")).collect();
        panic!(
            "fuzz target {name} panicked (seed {seed}, iteration {iter:?}); input ({} bytes, hex): {shown}",
            input.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_vary_and_repeat() {
        let corpus = vec![b"bytes=0-99".to_vec(), b"abc".to_vec()];
        let (mut a, mut b) = (Rng(7), Rng(7));
        let xs: Vec<Vec<u8>> = (0..200).map(|_| mutate(&mut a, &corpus)).collect();
        let ys: Vec<Vec<u8>> = (0..200).map(|_| mutate(&mut b, &corpus)).collect();
        assert_eq!(xs, ys, "the same seed gives the same inputs");
        let distinct: std::collections::HashSet<_> = xs.iter().collect();
        assert!(distinct.len() > 150, "{}", distinct.len());
    }

    #[test]
    #[should_panic(expected = "fuzz target finds-panics panicked")]
    fn a_panicking_parser_is_reported() {
        run("finds-panics", &[b"12"], |input| {
            if input.len() > 3 {
                panic!("too long");
            }
        });
    }
}
