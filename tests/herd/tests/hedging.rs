//! The hedging experiment's claims at a small N (1,000 requests of 100 leaves, after 5 s of
//! warm-up; the release command runs 50,000), and its determinism. Honest assertions over a
//! deterministic, seeded simulation; nothing here is timed.

use std::sync::OnceLock;

use backstop_herd::hedge_outputs::run;
use backstop_herd::hedging::{self, claim_checks, Case, Config, Outcome};
use backstop_herd::report;

const CONFIG: Config = Config {
    requests: 1_000,
    warmup: 500,
    fan_out: 100,
    rate: 100,
    seed: 2012,
};

/// One run of every case, shared by the tests.
fn outcomes() -> &'static [Outcome] {
    static OUTCOMES: OnceLock<Vec<Outcome>> = OnceLock::new();
    OUTCOMES.get_or_init(|| run(&CONFIG))
}

fn tables(outcomes: &[Outcome]) -> String {
    report::hedge_table(outcomes) + &report::hedge_load_table(outcomes, 10)
}

#[test]
fn the_claims_hold() {
    for (what, holds) in claim_checks(outcomes()) {
        assert!(holds, "{what}\n{}", tables(outcomes()));
    }
}

#[test]
fn the_table_has_the_columns_and_rows_of_the_issue() {
    let table = report::hedge_table(outcomes().get(..Case::ROWS.len()).unwrap_or_default());
    let mut lines = table.lines();
    assert_eq!(
        lines.next(),
        Some("| case | p50 ms | p95 ms | p99 ms | p99.9 ms | extra % |")
    );
    assert_eq!(lines.count(), 1 + Case::ROWS.len(), "{table}");
}

#[test]
fn a_backup_never_makes_a_request_slower() {
    // Every copy of a leaf takes the same draw in every case, and a leaf hedged after 10 ms
    // ends at min(L1, 10 ms + L2) <= L1: request by request, hence rank by rank, no hedging
    // is never faster.
    let get = |c: Case| {
        outcomes()
            .iter()
            .find(|o| o.case == c)
            .expect("the case ran")
    };
    let (none, fixed) = (get(Case::NONE), get(Case::FIXED_10));
    assert_eq!(none.latencies_ms.len(), fixed.latencies_ms.len());
    for (rank, (n, f)) in none
        .latencies_ms
        .iter()
        .zip(&fixed.latencies_ms)
        .enumerate()
    {
        assert!(f <= n, "rank {rank}: {f} ms hedged, {n} ms without");
    }
    assert!(fixed.latencies_ms.iter().sum::<f64>() < none.latencies_ms.iter().sum::<f64>());
}

#[test]
fn a_run_is_deterministic_for_a_seed() {
    let again = run(&CONFIG);
    assert_eq!(tables(outcomes()), tables(&again));
    assert_eq!(outcomes(), &again[..]);
    let other = hedging::run(&Config { seed: 7, ..CONFIG }, Case::FIXED_10);
    assert_ne!(other.latencies_ms, outcomes()[1].latencies_ms);
}
