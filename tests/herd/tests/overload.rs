//! Issues 21 and 27's experiments at a small size (pushback: 20 clients; the fleet: 100
//! processes of 10 clients; adaptive: 10 clients measured for 20 s after 10 s of warm-up,
//! without the shared-limiter row, whose thousand waits per operation would take a minute in
//! debug; the release command runs 100 clients, 1,000 processes, 60 s and every row), their
//! expectations and goals, and their determinism. Honest assertions over a deterministic,
//! seeded simulation; nothing here is timed.

use core::time::Duration;
use std::sync::OnceLock;

use backstop_core::Reopening;
use backstop_herd::overload_control::{self, Results};
use backstop_herd::{adaptive, fleet, pushback};

const PUSH: pushback::Config = pushback::Config {
    clients: 20,
    interval: Duration::from_millis(100),
    outage_start: Duration::from_secs(2),
    outage: Duration::from_secs(10),
    duration: Duration::from_secs(16),
    seed: 2021,
};

const FLEET: fleet::Config = fleet::Config {
    processes: 100,
    clients_per_process: 10,
    interval: Duration::from_millis(100),
    outage_start: Duration::from_secs(2),
    outage: Duration::from_secs(5),
    duration: Duration::from_secs(11),
    capacity_per_bin: 1_500,
    seed: 2021,
};

const ADAPT: adaptive::Config = adaptive::Config {
    clients: 10,
    interval: Duration::from_millis(20),
    server_rate: 100.0,
    server_burst: 10.0,
    warmup: Duration::from_secs(10),
    measure: Duration::from_secs(20),
    seed: 2021,
};

/// The adaptive rows the tests run: the two the goals compare.
const ROWS: [adaptive::Variant; 2] = [adaptive::Variant::RetryOnly, adaptive::Variant::Adaptive];

fn run() -> Results {
    overload_control::run_variants(&PUSH, &FLEET, &ADAPT, &ROWS)
}

/// One run of both experiments, shared by the tests.
fn results() -> &'static Results {
    static RESULTS: OnceLock<Results> = OnceLock::new();
    RESULTS.get_or_init(run)
}

fn markdown(r: &Results) -> String {
    overload_control::markdown(&PUSH, &FLEET, &ADAPT, r)
}

#[test]
fn the_pushback_expectations_hold() {
    let r = results();
    assert_eq!(r.pushback.len(), pushback::Variant::ALL.len());
    for (what, holds) in &r.pushback_checks {
        assert!(holds, "{what}\n{}", markdown(r));
    }
}

#[test]
fn the_fleet_goals_hold() {
    let r = results();
    assert_eq!(r.fleet.len(), fleet::Variant::ALL.len());
    for (what, holds) in &r.fleet_checks {
        assert!(holds, "{what}\n{}", markdown(r));
    }
}

#[test]
fn a_fleet_told_one_instant_returns_in_step_without_slow_start() {
    let r = results();
    let steady = FLEET.steady_per_bin();
    let at_once = r
        .fleet
        .iter()
        .find(|o| o.variant.rule == Reopening::AtOnce)
        .expect("the variant ran");
    // Every gate closed until the same instant and opened for all at once: the herd.
    assert!(f64::from(at_once.peak_3s) > 5.0 * steady, "{}", markdown(r));
    for o in &r.fleet {
        // Nothing reaches the server between the last 503 of the outage and the instant.
        let (_, told) = FLEET.window();
        let before = (told / fleet::FINE_NS) as usize;
        assert_eq!(o.per_fine[before - 5..before], [0; 5], "{}", markdown(r));
    }
}

#[test]
fn the_adaptive_goals_hold() {
    let r = results();
    assert_eq!(r.adaptive.len(), ROWS.len());
    for (what, holds) in &r.adaptive_checks {
        assert!(holds, "{what}\n{}", markdown(r));
    }
}

#[test]
fn a_gate_holds_back_the_outage_and_paces_its_return() {
    let r = results();
    let get = |v: pushback::Variant| {
        r.pushback
            .iter()
            .find(|o| o.variant == v)
            .expect("the variant ran")
    };
    let none = get(pushback::Variant::NoGate);
    let steady = PUSH.steady_per_bin();
    for v in pushback::Variant::ALL.into_iter().skip(1) {
        let gated = get(v);
        // The operations held back by the gate send after the recovery, so fewer requests in
        // all (no 503 to retry).
        assert!(gated.total < none.total, "{}", markdown(r));
        assert!(gated.held > 0 && gated.closes > 0, "{}", markdown(r));
        match v.rule() {
            // Without slow start, the backlog returns as one burst, above the ungated one.
            Some(Reopening::AtOnce) => {
                assert!(gated.peak_1s > none.peak_1s, "{}", markdown(r));
                assert!(f64::from(gated.peak_1s) > 5.0 * steady, "{}", markdown(r));
            }
            // Doubling reaches four times the starting pace within 3 s.
            Some(Reopening::Doubling { .. }) => {
                assert!(f64::from(gated.peak_3s) > 2.0 * steady, "{}", markdown(r));
            }
            _ => {}
        }
    }
    assert_eq!((none.held, none.closes), (0, 0));
}

#[test]
fn the_tables_have_a_row_per_variant() {
    let md = markdown(results());
    for name in pushback::Variant::ALL
        .iter()
        .map(|v| v.name())
        .chain(fleet::Variant::ALL.iter().map(|v| v.name()))
        .chain(ROWS.iter().map(|v| v.name().to_owned()))
    {
        assert!(
            md.lines()
                .filter(|l| l.starts_with(&format!("| {name} |")))
                .count()
                == 2,
            "{name}\n{md}"
        );
    }
}

#[test]
fn a_run_is_deterministic_for_a_seed() {
    let again = run();
    assert_eq!(markdown(results()), markdown(&again));
    assert_eq!(results(), &again);
    let variant = pushback::Variant::Shared(Reopening::DEFAULT);
    let other = pushback::run(&pushback::Config { seed: 7, ..PUSH }, variant);
    let shared = results()
        .pushback
        .iter()
        .find(|o| o.variant == variant)
        .expect("the variant ran");
    assert_ne!(other.per_bin, shared.per_bin);
}
