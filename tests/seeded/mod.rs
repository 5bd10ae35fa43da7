//! The seed every randomized test of this crate runs from: fixed and printed, so a run is
//! reproducible and a failure can be replayed; an environment variable explores another.

#![allow(dead_code, reason = "each test file uses its own subset of these helpers")]

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The seed from `env` (a decimal `u64`), else `default`; printed with how to replay it.
pub(crate) fn seed(test: &str, env: &str, default: u64) -> u64 {
    let seed = std::env::var(env).ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    println!("{test} seed: {seed} (replay with {env}={seed})");
    seed
}

/// A runner of `cases` cases on ChaCha from `seed`, writing no failure-persistence files.
pub(crate) fn runner_from(seed: u64, cases: u32) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// [`seed`], then [`runner_from`].
pub(crate) fn runner(test: &str, env: &str, default: u64, cases: u32) -> TestRunner {
    runner_from(seed(test, env, default), cases)
}
