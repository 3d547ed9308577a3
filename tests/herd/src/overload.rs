//! Part 2: overload, outage and blip, with and without retry budgets.
//!
//! One client process starts operations (`GET`s) at random (Poisson) at a steady
//! [`Config::rate`]; every operation is a backstop [`RetryMachine`]; the machines of a run
//! share one budget, as the operations of one process share its HTTP client. The server
//! answers `200` while it has capacity (a token bucket of [`Config::capacity`] requests per
//! second) and `503` beyond it. Hops take `|Normal(10 ms, 2 ms)|`, as in part 1. Between
//! [`Config::event_start`] and the end of the scenario's window, one of three things happens:
//!
//! - [`Scenario::Outage`]: every request fails with `503`.
//! - [`Scenario::Overload`]: the server's capacity falls to [`Config::overload_capacity`].
//! - [`Scenario::Blip`]: a share [`Config::blip_error_rate`] of the requests fail with `503`.
//!
//! The clients ([`Client`]) are: no retries; naive retries (4 attempts, exponential backoff
//! without jitter); full jitter (4 attempts, backstop's default policy); and full jitter with
//! each of backstop's three budgets.

use core::time::Duration;

use backstop_core::{
    Budget, Decision, Event, Instant, Jitter, Method, Policy, RatioBudget, Request, Response,
    RetryMachine, RetryQuota, TokenBucket, Unlimited,
};
use rand_pcg::Pcg64Mcg;

use crate::events::Queue;
use crate::net::{rng, unit, Network, MS};

/// Nanoseconds per second.
const SEC: u64 = 1_000 * MS;
/// The width of one bin of the load-over-time series.
pub const BIN_NS: u64 = 100 * MS;

/// The experiment's fixed numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The length of a run in seconds; operations start during it.
    pub duration_s: u64,
    /// The baseline load: operations started per second.
    pub rate: f64,
    /// The server's capacity in requests per second.
    pub capacity: f64,
    /// The server's capacity during [`Scenario::Overload`].
    pub overload_capacity: f64,
    /// When the scenario's event starts, in seconds.
    pub event_start: u64,
    /// How long an outage or an overload lasts, in seconds.
    pub long_event_s: u64,
    /// How long a blip lasts, in seconds.
    pub blip_s: u64,
    /// The share of requests that fail during a blip.
    pub blip_error_rate: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            duration_s: 40,
            rate: 1_000.0,
            capacity: 1_250.0,
            overload_capacity: 500.0,
            event_start: 10,
            long_event_s: 10,
            blip_s: 2,
            blip_error_rate: 0.2,
        }
    }
}

/// What goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// Every request fails with 503.
    Outage,
    /// Capacity falls below the baseline load.
    Overload,
    /// A share of the requests fail, briefly.
    Blip,
}

impl Scenario {
    /// Every scenario, in table order.
    pub const ALL: [Scenario; 3] = [Scenario::Outage, Scenario::Overload, Scenario::Blip];

    /// The name used in tables and figures.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Scenario::Outage => "outage",
            Scenario::Overload => "overload",
            Scenario::Blip => "blip",
        }
    }

    /// The event's window `[start, end)` in nanoseconds.
    #[must_use]
    pub const fn window(self, config: &Config) -> (u64, u64) {
        let len = match self {
            Scenario::Outage | Scenario::Overload => config.long_event_s,
            Scenario::Blip => config.blip_s,
        };
        (config.event_start * SEC, (config.event_start + len) * SEC)
    }
}

/// How the client retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    /// One attempt per operation.
    NoRetries,
    /// 4 attempts, exponential backoff (300 ms, cap 5 s), no jitter.
    Naive,
    /// 4 attempts, exponential backoff (300 ms, cap 5 s), full jitter: backstop's default.
    FullJitter,
    /// Full jitter and a gRPC-style [`TokenBucket`] of this many tokens, ratio 0.1.
    TokenBucket(u32),
    /// Full jitter and the AWS SDKs' standard [`RetryQuota`] (500; 5 per retry; 1 back per
    /// success).
    RetryQuota,
    /// Full jitter and a 10% [`RatioBudget`] (10 s window, 10 retries per second minimum).
    Ratio,
}

impl Client {
    /// Every client, in table order.
    pub const ALL: [Client; 7] = [
        Client::NoRetries,
        Client::Naive,
        Client::FullJitter,
        Client::TokenBucket(100),
        Client::TokenBucket(1_000),
        Client::RetryQuota,
        Client::Ratio,
    ];

    /// The name used in tables and figures.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Client::NoRetries => "no retries",
            Client::Naive => "naive (4, no jitter)",
            Client::FullJitter => "full jitter (4)",
            Client::TokenBucket(100) => "+ token bucket (100)",
            Client::TokenBucket(1_000) => "+ token bucket (1000)",
            Client::TokenBucket(_) => "+ token bucket",
            Client::RetryQuota => "+ retry quota",
            Client::Ratio => "+ 10% ratio budget",
        }
    }

    /// The client's policy.
    ///
    /// # Panics
    ///
    /// Never: the policies are valid by construction.
    #[must_use]
    pub fn policy(self) -> Policy {
        let builder = Policy::builder().max_attempts(4);
        match self {
            Client::NoRetries => builder.max_attempts(1),
            Client::Naive => builder.jitter(Jitter::None),
            _ => builder.jitter(Jitter::Full),
        }
        .build()
        .expect("the experiment's policies are valid")
    }

    /// A fresh budget for one run.
    ///
    /// # Panics
    ///
    /// Never: the budgets are valid by construction.
    #[must_use]
    pub fn budget(self) -> Box<dyn Budget> {
        match self {
            Client::NoRetries | Client::Naive | Client::FullJitter => Box::new(Unlimited),
            Client::TokenBucket(max) => {
                Box::new(TokenBucket::new(max, 100).expect("a valid token bucket"))
            }
            Client::RetryQuota => Box::new(RetryQuota::new()),
            Client::Ratio => Box::new(
                RatioBudget::new(10, 10, Duration::from_secs(10)).expect("a valid ratio budget"),
            ),
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The scenario.
    pub scenario: Scenario,
    /// The client.
    pub client: Client,
    /// Requests that reached the server during the event, per operation started during it.
    pub amplification: f64,
    /// Successful responses per second during the event.
    pub goodput: f64,
    /// The share of the operations started during the event that ended with a 200.
    pub success_share: f64,
    /// The share of all operations of the run that ended with a 200.
    pub success_share_all: f64,
    /// Seconds from the end of the event to the first second in which at least 99% of the
    /// requests succeeded; `None` if that never happened before the run ended.
    pub recovery_s: Option<f64>,
    /// Requests that reached the server, per [`BIN_NS`] bin.
    pub requests: Vec<u32>,
    /// Successful responses, per [`BIN_NS`] bin.
    pub successes: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The next operation starts.
    Arrival,
    /// An attempt of operation `op` reaches the server.
    AtServer(u32),
    /// The server's reply to operation `op` reaches the client.
    Reply(u32, u16),
    /// Operation `op`'s wait ends.
    Wake(u32),
}

struct Server {
    tokens: f64,
    refilled_at: u64,
}

/// Runs one scenario with one client. `seed` fixes the arrivals, the network, the server's
/// coin flips and every operation's jitter.
///
/// # Panics
///
/// If the machine misbehaves (a misplaced event, an unexpected decision).
#[must_use]
pub fn run(config: &Config, scenario: Scenario, client: Client, seed: u64) -> Outcome {
    let policy = client.policy();
    let budget = client.budget();
    let budget: &dyn Budget = &*budget;
    let (start, end) = scenario.window(config);
    let horizon = config.duration_s * SEC;
    let bins = (horizon / BIN_NS) as usize;
    let mut requests = vec![0u32; bins];
    let mut successes = vec![0u32; bins];

    let mut net = Network::herd(rng(seed, &[0]));
    let mut arrivals = rng(seed, &[1]);
    let burst = config.capacity / 10.0;
    let mut server = Server {
        tokens: burst,
        refilled_at: 0,
    };
    let mut ops: Vec<Op<'_>> = Vec::new();
    let mut queue = Queue::default();
    queue.at(0, Ev::Arrival);

    while let Some((t, ev)) = queue.pop() {
        match ev {
            Ev::Arrival => {
                let id = u32::try_from(ops.len()).expect("fewer than 2^32 operations");
                ops.push(Op {
                    machine: RetryMachine::with_budget(
                        policy,
                        Request::new(Method::Get),
                        rng(seed, &[2, u64::from(id)]),
                        budget,
                        at(t),
                    ),
                    started: t,
                    succeeded: false,
                });
                drive(&mut ops, id, t, &mut queue, &mut net);
                let gap = -unit(&mut arrivals).ln() / config.rate;
                let next = t + (gap * SEC as f64) as u64;
                if next < horizon {
                    queue.at(next, Ev::Arrival);
                }
            }
            Ev::AtServer(id) => {
                let in_event = (start..end).contains(&t);
                let capacity = if in_event && scenario == Scenario::Overload {
                    config.overload_capacity
                } else {
                    config.capacity
                };
                server.tokens = (server.tokens
                    + (t - server.refilled_at) as f64 / SEC as f64 * capacity)
                    .min(capacity / 10.0);
                server.refilled_at = t;
                let failed = in_event
                    && match scenario {
                        Scenario::Outage => true,
                        Scenario::Blip => net.unit() <= config.blip_error_rate,
                        Scenario::Overload => false,
                    };
                let status = if !failed && server.tokens >= 1.0 {
                    server.tokens -= 1.0;
                    200
                } else {
                    503
                };
                let bin = (t / BIN_NS) as usize;
                if let Some(n) = requests.get_mut(bin) {
                    *n += 1;
                }
                if status == 200 {
                    if let Some(n) = successes.get_mut(bin) {
                        *n += 1;
                    }
                }
                queue.at(t + net.hop(), Ev::Reply(id, status));
            }
            Ev::Reply(id, status) => {
                op(&mut ops, id)
                    .machine
                    .handle(at(t), Event::Response(Response::new(status)))
                    .expect("a reply for the attempt in flight");
                drive(&mut ops, id, t, &mut queue, &mut net);
            }
            Ev::Wake(id) => drive(&mut ops, id, t, &mut queue, &mut net),
        }
    }

    let in_window = |t: u64| (start..end).contains(&t);
    let started = ops.iter().filter(|o| in_window(o.started)).count();
    let ok = ops
        .iter()
        .filter(|o| in_window(o.started) && o.succeeded)
        .count();
    let (b0, b1) = ((start / BIN_NS) as usize, (end / BIN_NS) as usize);
    let sum = |v: &[u32]| v.get(b0..b1).unwrap_or_default().iter().sum::<u32>() as f64;
    let per_second = (SEC / BIN_NS) as usize;
    let recovery_bin = (b1..bins.saturating_sub(per_second)).find(|&b| {
        let r: u32 = requests
            .get(b..b + per_second)
            .unwrap_or_default()
            .iter()
            .sum();
        let s: u32 = successes
            .get(b..b + per_second)
            .unwrap_or_default()
            .iter()
            .sum();
        r > 0 && f64::from(s) >= 0.99 * f64::from(r)
    });
    Outcome {
        scenario,
        client,
        amplification: sum(&requests) / started.max(1) as f64,
        goodput: sum(&successes) / ((end - start) as f64 / SEC as f64),
        success_share: ok as f64 / started.max(1) as f64,
        success_share_all: ops.iter().filter(|o| o.succeeded).count() as f64
            / ops.len().max(1) as f64,
        recovery_s: recovery_bin.map(|b| (b - b1) as f64 * BIN_NS as f64 / SEC as f64),
        requests,
        successes,
    }
}

struct Op<'a> {
    machine: RetryMachine<Pcg64Mcg, &'a dyn Budget>,
    started: u64,
    succeeded: bool,
}

fn at(t: u64) -> Instant {
    Instant::from_duration(Duration::from_nanos(t))
}

fn op<'o, 'a>(ops: &'o mut [Op<'a>], id: u32) -> &'o mut Op<'a> {
    ops.get_mut(id as usize)
        .expect("operations are numbered from 0")
}

/// Acts on operation `id`'s next decision at `t`.
fn drive(ops: &mut [Op<'_>], id: u32, t: u64, queue: &mut Queue<Ev>, net: &mut Network) {
    let o = op(ops, id);
    match o.machine.poll(at(t)) {
        Decision::Send { .. } => {
            o.machine
                .handle(at(t), Event::AttemptStarted)
                .expect("the machine asked to send");
            queue.at(t + net.hop(), Ev::AtServer(id));
        }
        Decision::Wait { until, .. } => {
            let until = u64::try_from(until.as_duration().as_nanos()).unwrap_or(u64::MAX);
            queue.at(until, Ev::Wake(id));
        }
        Decision::Return(outcome) => {
            o.succeeded = outcome.last == Some(backstop_core::AttemptOutcome::Response(200));
        }
        other => panic!("operation {id}: unexpected decision {other:?}"),
    }
}

/// The claim of the issue, checked against measured outcomes: each entry is the statement
/// and whether it holds.
#[must_use]
pub fn claim_checks(outcomes: &[Outcome]) -> Vec<(String, bool)> {
    let get = |sc: Scenario, c: Client| outcomes.iter().find(|o| o.scenario == sc && o.client == c);
    let (
        Some(ratio_outage),
        Some(naive_outage),
        Some(jitter_outage),
        Some(ratio_blip),
        Some(jitter_blip),
    ) = (
        get(Scenario::Outage, Client::Ratio),
        get(Scenario::Outage, Client::Naive),
        get(Scenario::Outage, Client::FullJitter),
        get(Scenario::Blip, Client::Ratio),
        get(Scenario::Blip, Client::FullJitter),
    )
    else {
        return vec![("every scenario and client was run".to_owned(), false)];
    };
    vec![
        (
            format!(
                "full outage, 10% ratio budget: amplification {:.2}x <= 1.15x",
                ratio_outage.amplification
            ),
            ratio_outage.amplification <= 1.15,
        ),
        (
            format!(
                "full outage, no budget: amplification {:.2}x (naive) and {:.2}x (full jitter), near max_attempts = 4 (>= 3.5x)",
                naive_outage.amplification, jitter_outage.amplification
            ),
            naive_outage.amplification >= 3.5 && jitter_outage.amplification >= 3.5,
        ),
        (
            format!(
                "20% errors for 2 s: success with the 10% budget {:.2}% >= {:.2}% without a budget",
                100.0 * ratio_blip.success_share,
                100.0 * jitter_blip.success_share
            ),
            ratio_blip.success_share >= jitter_blip.success_share,
        ),
    ]
}
