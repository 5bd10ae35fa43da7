//! The seed every property test runs from: fixed and printed, so a run is reproducible and a
//! failure can be replayed; an environment variable explores another.

use proptest::test_runner::{Config, RngAlgorithm, RngSeed};

/// The seed from `env` (a decimal `u64`), else `default`.
pub(crate) fn seed(env: &str, default: u64) -> u64 {
    std::env::var(env).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// `cases` cases, ChaCha from the seed (printed with how to replay it), no failure-persistence
/// files.
pub(crate) fn config(test: &str, env: &str, default: u64, cases: u32) -> Config {
    let seed = seed(env, default);
    eprintln!("{test}: proptest seed {seed} (replay with {env}={seed})");
    Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}
