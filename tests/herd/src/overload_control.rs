//! Issues 21 and 27's experiments run together (binary `overload`): the [`pushback`]
//! experiment's variants, the [`fleet`]'s and the [`adaptive`] experiment's, on every core,
//! and their tables beside the goals.

use crate::parallel::parallel;
use crate::{adaptive, fleet, pushback, report};

/// Every outcome of both experiments, and the checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    /// One per [`pushback::Variant::ALL`], in order.
    pub pushback: Vec<pushback::Outcome>,
    /// One per [`adaptive::Variant::ALL`], in order.
    pub adaptive: Vec<adaptive::Outcome>,
    /// One per [`fleet::Variant::ALL`], in order.
    pub fleet: Vec<fleet::Outcome>,
    /// The pushback expectations: each statement and whether it holds.
    pub pushback_checks: Vec<(String, bool)>,
    /// The fleet's goals: each statement and whether it holds.
    pub fleet_checks: Vec<(String, bool)>,
    /// The adaptive goals: each statement and whether it holds.
    pub adaptive_checks: Vec<(String, bool)>,
}

impl Results {
    /// Whether every expectation and goal holds.
    #[must_use]
    pub fn all_hold(&self) -> bool {
        self.pushback_checks
            .iter()
            .chain(&self.fleet_checks)
            .chain(&self.adaptive_checks)
            .all(|(_, ok)| *ok)
    }
}

#[derive(Clone, Copy, Debug)]
enum Job {
    Push(pushback::Variant),
    Fleet(fleet::Variant),
    Adapt(adaptive::Variant),
}

enum Done {
    Push(pushback::Outcome),
    Fleet(fleet::Outcome),
    Adapt(adaptive::Outcome),
}

/// Runs both experiments, every variant (each variant is an independent run, so the results do
/// not depend on the number of threads).
#[must_use]
pub fn run(push: &pushback::Config, fleet: &fleet::Config, adapt: &adaptive::Config) -> Results {
    run_variants(push, fleet, adapt, &adaptive::Variant::ALL)
}

/// The same with only the adaptive experiment's `variants` (in the order given; the goals
/// need [`adaptive::Variant::RetryOnly`] and [`adaptive::Variant::Adaptive`]).
#[must_use]
pub fn run_variants(
    push: &pushback::Config,
    fleet: &fleet::Config,
    adapt: &adaptive::Config,
    variants: &[adaptive::Variant],
) -> Results {
    // The longest runs first.
    let jobs: Vec<Job> = fleet::Variant::ALL
        .iter()
        .map(|&v| Job::Fleet(v))
        .chain(variants.iter().rev().map(|&v| Job::Adapt(v)))
        .chain(pushback::Variant::ALL.iter().map(|&v| Job::Push(v)))
        .collect();
    let done = parallel(&jobs, |&job| match job {
        Job::Push(v) => Done::Push(pushback::run(push, v)),
        Job::Fleet(v) => Done::Fleet(fleet::run(fleet, v)),
        Job::Adapt(v) => Done::Adapt(adaptive::run(adapt, v)),
    });
    let mut pushback = Vec::new();
    let mut fleets = Vec::new();
    let mut adaptive = Vec::new();
    for d in done {
        match d {
            Done::Push(o) => pushback.push(o),
            Done::Fleet(o) => fleets.push(o),
            Done::Adapt(o) => adaptive.push(o),
        }
    }
    adaptive.reverse();
    Results {
        pushback_checks: pushback::checks(push, &pushback),
        fleet_checks: fleet::checks(fleet, &fleets),
        adaptive_checks: adaptive::checks(&adaptive),
        pushback,
        fleet: fleets,
        adaptive,
    }
}

/// The tables and checks of every experiment, as Markdown.
#[must_use]
pub fn markdown(
    push: &pushback::Config,
    fleet: &fleet::Config,
    adapt: &adaptive::Config,
    r: &Results,
) -> String {
    let steady = push.steady_per_bin();
    format!(
        "## Pushback (seed {}): {} clients at {:.0} requests/s each; 503 `Retry-After: 10` from {} s to {} s\n\n\
         The steady offered load is {steady:.0} requests per 100 ms ({:.0} in a second).\n\n{}\n\
         Operations by how they ended:\n\n{}\n{}\n\
         Expectations:\n\n{}\n\
         {}\
         ## Adaptive (seed {}): {} clients at {:.0} requests/s each; the server admits {:.0}/s (burst {:.0}), 429 above; measured from {} s to {} s\n\n{}\n\
         Operations started in the window, by how they ended:\n\n{}\n\
         The goals:\n\n{}",
        push.seed,
        push.clients,
        1.0 / push.interval.as_secs_f64(),
        push.outage_start.as_secs(),
        (push.outage_start + push.outage).as_secs(),
        steady * 10.0,
        report::pushback_table(&r.pushback, steady),
        report::pushback_stops_table(&r.pushback),
        report::why_the_default(&r.pushback, steady),
        report::checks(&r.pushback_checks),
        report::fleet_section(fleet, &r.fleet, &r.fleet_checks),
        adapt.seed,
        adapt.clients,
        1.0 / adapt.interval.as_secs_f64(),
        adapt.server_rate,
        adapt.server_burst,
        adapt.warmup.as_secs(),
        (adapt.warmup + adapt.measure).as_secs(),
        report::adaptive_table(&r.adaptive),
        report::adaptive_ops_table(&r.adaptive),
        report::checks(&r.adaptive_checks),
    )
}
