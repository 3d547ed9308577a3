//! Part 1 reproduces the published shape of Brooker's contention experiment at N = 100, and
//! part 2 backs the claim. Honest assertions over a deterministic, seeded simulation
//! (fewer runs than the release command, so the test stays fast); nothing here is timed.

use backstop_herd::contention::{run, shape_checks, sweep_point, Strategy};
use backstop_herd::overload::{self, claim_checks, Client, Config, Scenario};

const SEED: u64 = 2015;

#[test]
fn contention_at_n_100_has_the_published_shape() {
    let results: Vec<_> = Strategy::ALL
        .iter()
        .map(|&s| sweep_point(s, 100, 100, SEED))
        .collect();
    for (what, holds) in shape_checks(&results) {
        assert!(holds, "{what}: {results:#?}");
    }
}

#[test]
fn contention_run_is_deterministic_for_a_seed() {
    for s in Strategy::ALL {
        assert_eq!(run(s, 30, 7), run(s, 30, 7));
    }
    assert_ne!(
        run(Strategy::FullJitter, 30, 7),
        run(Strategy::FullJitter, 30, 8)
    );
}

#[test]
fn one_client_writes_once() {
    for s in Strategy::ALL {
        assert_eq!(run(s, 1, SEED).calls, 1);
    }
}

#[test]
fn budget_claim_holds_in_outage_and_blip() {
    let config = Config::default();
    let outcomes: Vec<_> = [Scenario::Outage, Scenario::Blip]
        .iter()
        .flat_map(|&sc| {
            [Client::Naive, Client::FullJitter, Client::Ratio]
                .map(|c| overload::run(&config, sc, c, SEED))
        })
        .collect();
    for (what, holds) in claim_checks(&outcomes) {
        assert!(holds, "{what}");
    }
}

#[test]
fn every_budget_keeps_outage_amplification_low() {
    let config = Config::default();
    for c in [Client::TokenBucket(100), Client::RetryQuota, Client::Ratio] {
        let o = overload::run(&config, Scenario::Outage, c, SEED);
        assert!(o.amplification <= 1.15, "{}: {}", c.name(), o.amplification);
        assert_eq!(o.recovery_s, Some(0.0), "{}", c.name());
    }
}
