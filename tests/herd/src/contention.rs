//! Part 1: optimistic-concurrency contention, after Brooker (2015) and
//! awslabs/aws-arch-backoff-simulator.
//!
//! N clients each need one successful write. A client reads the server's version (a hop there,
//! a hop back), then writes with it (a hop there, a hop back). The server accepts the write if
//! the version is unchanged (and bumps it), else answers `409 Conflict`. Every hop takes
//! `|Normal(10 ms, 2 ms)|`; the server takes no time and has no capacity limit.
//!
//! Each client is one backstop [`RetryMachine`] for one `PUT` (an "attempt" is one read plus
//! one write), with 409 retryable, no attempt or time limit, and the machine's own backoff and
//! jitter deciding every sleep. The strategies map the formulas of Brooker's 2015 article onto the machine:
//!
//! | strategy (retry `n`, base 5 ms, cap 2 s) | backstop policy |
//! |---|---|
//! | none: 0 | `Backoff::constant(0)`, `Jitter::None` |
//! | exponential `min(cap, 5 * 2^n)` | `Backoff::exponential(10 ms, 2 s)` (`10 * 2^(n-1)` is the same), `Jitter::None` |
//! | full `U[0, that)` | the same backoff, `Jitter::Full` (`U[0, that]`) |
//! | equal `that/2 + U[0, that/2)` | the same backoff, `Jitter::Equal` |
//! | decorrelated `min(cap, U[5, 3 * sleep))`, `sleep` from 5 | `Backoff::exponential(5 ms, 2 s)`, `Jitter::Decorrelated` (the machine's previous wait starts at the base) |
//!
//! The half-open intervals of the original become closed ones at nanosecond resolution: the
//! difference is one nanosecond in 2^64 draws.

use core::time::Duration;

use backstop_core::{
    Backoff, Decision, Event, Instant, Jitter, Method, Policy, Request, Response, RetryMachine,
};
use rand_pcg::Pcg64Mcg;

use crate::events::Queue;
use crate::net::{rng, Network, MS};
use crate::stats::Summary;

/// A backoff strategy from Brooker's experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Retry at once.
    NoBackoff,
    /// Exponential backoff without jitter.
    Exponential,
    /// Exponential backoff with full jitter.
    FullJitter,
    /// Exponential backoff with equal jitter.
    EqualJitter,
    /// Decorrelated jitter.
    Decorrelated,
}

impl Strategy {
    /// Every strategy, in the order of the tables.
    pub const ALL: [Strategy; 5] = [
        Strategy::NoBackoff,
        Strategy::Exponential,
        Strategy::FullJitter,
        Strategy::EqualJitter,
        Strategy::Decorrelated,
    ];

    /// The name used in tables and figures.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::NoBackoff => "no backoff",
            Strategy::Exponential => "exponential",
            Strategy::FullJitter => "full jitter",
            Strategy::EqualJitter => "equal jitter",
            Strategy::Decorrelated => "decorrelated",
        }
    }

    /// The backstop policy that implements the strategy.
    ///
    /// # Panics
    ///
    /// Never: the policy is valid by construction.
    #[must_use]
    pub fn policy(self) -> Policy {
        let cap = Duration::from_millis(2_000);
        let (backoff, jitter) = match self {
            Strategy::NoBackoff => (Backoff::constant(Duration::ZERO), Jitter::None),
            Strategy::Exponential => (
                Backoff::exponential(Duration::from_millis(10), cap),
                Jitter::None,
            ),
            Strategy::FullJitter => (
                Backoff::exponential(Duration::from_millis(10), cap),
                Jitter::Full,
            ),
            Strategy::EqualJitter => (
                Backoff::exponential(Duration::from_millis(10), cap),
                Jitter::Equal,
            ),
            Strategy::Decorrelated => (
                Backoff::exponential(Duration::from_millis(5), cap),
                Jitter::Decorrelated,
            ),
        };
        let forever = Duration::from_secs(10_000_000);
        Policy::builder()
            .max_attempts(u32::MAX)
            .max_elapsed(forever)
            .attempt_timeout(forever)
            .retryable_statuses(&[409])
            .add_retry_method(Method::Put)
            .backoff(backoff)
            .jitter(jitter)
            .build()
            .expect("the experiment's policies are valid")
    }
}

/// What one run measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Writes that reached the server (reads are not counted).
    pub calls: u64,
    /// When the last client got its successful write's reply, in nanoseconds.
    pub time_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The client's read reaches the server.
    ReadAtServer(u32),
    /// The read's reply (with the version) reaches the client.
    ReadReply(u32, u64),
    /// The client's write (with the version it read) reaches the server.
    WriteAtServer(u32, u64),
    /// The write's reply reaches the client.
    WriteReply(u32, bool),
    /// The client's wait ends.
    Wake(u32),
}

/// Runs the experiment once with `clients` clients. `seed` fixes the network and every
/// client's jitter.
///
/// # Panics
///
/// If the machine misbehaves (a misplaced event, a give-up): the simulation checks the
/// machine as it drives it.
#[must_use]
pub fn run(strategy: Strategy, clients: u32, seed: u64) -> Run {
    let policy = strategy.policy();
    let mut net = Network::herd(rng(seed, &[0]));
    let mut machines: Vec<RetryMachine<Pcg64Mcg>> = (0..clients)
        .map(|c| {
            RetryMachine::new(
                policy,
                Request::new(Method::Put),
                rng(seed, &[1, u64::from(c)]),
                Instant::ZERO,
            )
        })
        .collect();
    let mut queue = Queue::default();
    let (mut version, mut calls, mut done, mut last) = (0u64, 0u64, 0u32, 0u64);

    for c in 0..clients {
        drive(&mut machines, c, 0, &mut queue, &mut net);
    }
    while let Some((t, ev)) = queue.pop() {
        match ev {
            Ev::ReadAtServer(c) => queue.at(t + net.hop(), Ev::ReadReply(c, version)),
            Ev::ReadReply(c, v) => queue.at(t + net.hop(), Ev::WriteAtServer(c, v)),
            Ev::WriteAtServer(c, v) => {
                calls += 1;
                let accepted = v == version;
                if accepted {
                    version += 1;
                }
                queue.at(t + net.hop(), Ev::WriteReply(c, accepted));
            }
            Ev::WriteReply(c, accepted) => {
                let status = if accepted { 200 } else { 409 };
                machine(&mut machines, c)
                    .handle(at(t), Event::Response(Response::new(status)))
                    .expect("a reply for the attempt in flight");
                if drive(&mut machines, c, t, &mut queue, &mut net) {
                    done += 1;
                    last = last.max(t);
                }
            }
            Ev::Wake(c) => {
                drive(&mut machines, c, t, &mut queue, &mut net);
            }
        }
    }
    assert_eq!(done, clients, "every client finishes");
    Run {
        calls,
        time_ns: last,
    }
}

fn at(t: u64) -> Instant {
    Instant::from_duration(Duration::from_nanos(t))
}

fn machine(machines: &mut [RetryMachine<Pcg64Mcg>], c: u32) -> &mut RetryMachine<Pcg64Mcg> {
    machines
        .get_mut(c as usize)
        .expect("clients are numbered from 0")
}

/// Acts on the client's next decision at `t`. Returns whether the client is done.
fn drive(
    machines: &mut [RetryMachine<Pcg64Mcg>],
    c: u32,
    t: u64,
    queue: &mut Queue<Ev>,
    net: &mut Network,
) -> bool {
    let m = machine(machines, c);
    match m.poll(at(t)) {
        Decision::Send { .. } => {
            m.handle(at(t), Event::AttemptStarted)
                .expect("the machine asked to send");
            // The sleep (if any) is already behind us: the read leaves now.
            queue.at(t + net.hop(), Ev::ReadAtServer(c));
            false
        }
        Decision::Wait { until, .. } => {
            let until = u64::try_from(until.as_duration().as_nanos()).unwrap_or(u64::MAX);
            queue.at(until, Ev::Wake(c));
            false
        }
        Decision::Return(o) => {
            assert_eq!(o.last, Some(backstop_core::AttemptOutcome::Response(200)));
            true
        }
        other => panic!("client {c}: unexpected decision {other:?}"),
    }
}

/// The summaries of many runs of one configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Result {
    /// The strategy.
    pub strategy: Strategy,
    /// The number of clients.
    pub clients: u32,
    /// The number of runs.
    pub runs: u32,
    /// Writes per run.
    pub calls: Summary,
    /// Completion time per run, in milliseconds.
    pub time_ms: Summary,
}

/// Runs a configuration `runs` times (run `i` seeded from `seed`, `clients` and `i`, the same
/// for every strategy) and summarises.
#[must_use]
pub fn sweep_point(strategy: Strategy, clients: u32, runs: u32, seed: u64) -> Result {
    let (mut calls, mut times): (Vec<f64>, Vec<f64>) = (0..runs)
        .map(|i| {
            let r = run(
                strategy,
                clients,
                crate::net::mix(seed, &[u64::from(clients), u64::from(i)]),
            );
            (r.calls as f64, r.time_ns as f64 / MS as f64)
        })
        .unzip();
    Result {
        strategy,
        clients,
        runs,
        calls: Summary::of(&mut calls),
        time_ms: Summary::of(&mut times),
    }
}

/// The published shape (Brooker 2015) at one N, checked against measured results: each entry is the
/// statement and whether it holds. `results` must hold every strategy at the same N.
#[must_use]
pub fn shape_checks(results: &[Result]) -> Vec<(&'static str, bool)> {
    let get = |s: Strategy| results.iter().find(|r| r.strategy == s);
    let (Some(none), Some(exp), Some(full), Some(equal), Some(decor)) = (
        get(Strategy::NoBackoff),
        get(Strategy::Exponential),
        get(Strategy::FullJitter),
        get(Strategy::EqualJitter),
        get(Strategy::Decorrelated),
    ) else {
        return vec![("every strategy was run", false)];
    };
    let jittered = [full, equal, decor];
    vec![
        (
            "full jitter needs less than half the calls of plain exponential",
            full.calls.mean < exp.calls.mean / 2.0,
        ),
        (
            "full and equal jitter do about the same work (within 10%)",
            (full.calls.mean - equal.calls.mean).abs() <= 0.1 * full.calls.mean,
        ),
        (
            "decorrelated does more work than full jitter",
            decor.calls.mean > full.calls.mean,
        ),
        (
            "decorrelated finishes sooner than full jitter",
            decor.time_ms.mean < full.time_ms.mean,
        ),
        (
            "equal jitter finishes later than full jitter",
            equal.time_ms.mean > full.time_ms.mean,
        ),
        (
            "plain exponential takes far longer (over 3x) than any jittered strategy",
            jittered
                .iter()
                .all(|j| exp.time_ms.mean > 3.0 * j.time_ms.mean),
        ),
        (
            "no backoff does the most work",
            [exp, full, equal, decor]
                .iter()
                .all(|o| none.calls.mean > o.calls.mean),
        ),
    ]
}
