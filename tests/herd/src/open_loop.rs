//! The driver of issue 21's overload-control experiments ([`pushback`](crate::pushback),
//! [`adaptive`](crate::adaptive)): open-loop clients whose operations are real
//! [`RetryMachine`]s sharing an origin [`Gate`] and a [`RateLimiter`], on virtual time.
//!
//! Client `c` starts an operation (a `GET`) every [`Setup::interval`], at a phase drawn once
//! from `U[0, interval)`, whether or not its earlier operations have finished (open-loop
//! arrivals), until [`Setup::horizon`]. Every operation is one `RetryMachine` built with
//! [`RetryMachine::with_overload`] and the client's gate and limiter. One global event queue
//! (virtual nanoseconds, ties in the order scheduled) holds every client's operations in
//! flight, so the shared objects see time move forward only, as in a process. Each hop (client
//! to server, server to client) takes `|Normal(10 ms, 2 ms)|` ([`Network::herd`]), drawn from
//! one stream in event order. The server is a closure from the arrival instant to the
//! response; the driver records every arrival and every operation's end. Clients are grouped
//! into processes of [`Setup::clients_per_process`], each process with its own gate and
//! limiter (or sharing them, as the caller passes them). Every process's wall clock reads
//! [`UNIX_AT_ZERO`] plus the virtual time (the clocks of a fleet in perfect step), so an
//! HTTP-date `Retry-After` names the same virtual instant to every client.

use core::time::Duration;
use std::collections::BTreeMap;

use backstop_core::{
    Decision, DelaySource, Event, Gate, Instant, Method, Outcome, Policy, RateLimiter, Request,
    Response, RetryMachine, UnixTime, Unlimited,
};
use rand_pcg::Pcg64Mcg;

use crate::events::Queue;
use crate::net::{rng, unit, Network, MS};

/// Nanoseconds per second.
pub const SEC: u64 = 1_000 * MS;

/// The Unix time at virtual time 0: every simulated wall clock reads this plus the virtual
/// time (2023-11-14 22:13:20 UTC).
pub const UNIX_AT_ZERO: u64 = 1_700_000_000;

/// The wall clock at virtual time `t` nanoseconds.
#[must_use]
pub const fn wall_clock(t: u64) -> UnixTime {
    UnixTime::from_duration(
        Duration::from_nanos(t).saturating_add(Duration::from_secs(UNIX_AT_ZERO)),
    )
}

/// What the server answers: a status and an optional raw `Retry-After` (delay-seconds, or an
/// HTTP-date read against the client's wall clock, [`wall_clock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Answer<'a> {
    /// The status code.
    pub status: u16,
    /// The raw `Retry-After` value, if any.
    pub retry_after: Option<&'a [u8]>,
}

impl<'a> Answer<'a> {
    /// A response with `status` and no `Retry-After`.
    #[must_use]
    pub const fn status(status: u16) -> Self {
        Answer {
            status,
            retry_after: None,
        }
    }

    /// The response the machine is given when it arrives at `t` nanoseconds: with the
    /// client's wall clock, the reference of an HTTP-date `Retry-After` (there is no `Date`
    /// field, so the date is read against the client's own clock).
    #[must_use]
    pub fn response(self, t: u64) -> Response<'a> {
        let response = Response::new(self.status).wall_clock(wall_clock(t));
        match self.retry_after {
            Some(v) => response.retry_after(v),
            None => response,
        }
    }
}

/// One request's arrival at the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// When it arrived, in virtual nanoseconds.
    pub at: u64,
    /// The status the server answered.
    pub status: u16,
}

/// One operation, once it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// The client that started it.
    pub client: u32,
    /// When it started, in virtual nanoseconds.
    pub started: u64,
    /// When it ended.
    pub ended: u64,
    /// The machine's outcome.
    pub outcome: Outcome,
    /// How many waits the gate or the limiter imposed on it ([`DelaySource::OriginPaused`],
    /// [`DelaySource::RateLimited`]).
    pub held: u32,
}

impl Op {
    /// Whether it ended with a `200`.
    #[must_use]
    pub fn succeeded(&self) -> bool {
        self.outcome.last == Some(backstop_core::AttemptOutcome::Response(200))
    }
}

/// What a run recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Every request that reached the server, in arrival order.
    pub arrivals: Vec<Arrival>,
    /// Every operation, in the order they started.
    pub ops: Vec<Op>,
}

impl Trace {
    /// Arrivals at the server per bin of `bin` nanoseconds, over `[0, end)`.
    #[must_use]
    pub fn arrivals_per_bin(
        &self,
        bin: u64,
        end: u64,
        keep: impl Fn(&Arrival) -> bool,
    ) -> Vec<u32> {
        let mut bins = vec![0u32; end.div_ceil(bin) as usize];
        for a in self.arrivals.iter().filter(|a| keep(a)) {
            if let Some(n) = bins.get_mut((a.at / bin) as usize) {
                *n += 1;
            }
        }
        bins
    }

    /// Arrivals in `[from, to)` for which `keep` holds.
    #[must_use]
    pub fn arrivals_in(&self, from: u64, to: u64, keep: impl Fn(&Arrival) -> bool) -> u32 {
        let n = self
            .arrivals
            .iter()
            .filter(|a| (from..to).contains(&a.at) && keep(a))
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The operations by stop reason ([`StopReason::as_str`](backstop_core::StopReason::as_str)),
    /// in name order.
    #[must_use]
    pub fn stops(&self) -> Vec<(&'static str, u32)> {
        stops(&self.ops)
    }

    /// The time from start to end, in seconds, of each operation started in `[from, to)`.
    #[must_use]
    pub fn durations_s(&self, from: u64, to: u64) -> Vec<f64> {
        self.ops
            .iter()
            .filter(|o| (from..to).contains(&o.started))
            .map(|o| (o.ended - o.started) as f64 / SEC as f64)
            .collect()
    }
}

/// `ops` by stop reason ([`StopReason::as_str`](backstop_core::StopReason::as_str)), in name
/// order.
#[must_use]
pub fn stops<'o>(ops: impl IntoIterator<Item = &'o Op>) -> Vec<(&'static str, u32)> {
    let mut stops = BTreeMap::new();
    for op in ops {
        *stops.entry(op.outcome.reason.as_str()).or_insert(0u32) += 1;
    }
    stops.into_iter().collect()
}

/// A run's fixed parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    /// Number of clients.
    pub clients: u32,
    /// Clients per process: clients `p * n .. (p + 1) * n` are process `p`'s (1: one client
    /// per process, as in the pushback and adaptive experiments).
    pub clients_per_process: u32,
    /// The time between two operations of one client.
    pub interval: Duration,
    /// Operations start in `[0, horizon)`; the run goes on until every one has ended.
    pub horizon: Duration,
    /// Every operation's policy.
    pub policy: Policy,
    /// Fixes the phases, the network and every operation's jitter.
    pub seed: u64,
    /// How often the sampler is called (`None`: never).
    pub sample_every: Option<Duration>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev<'a> {
    /// Client `c` starts an operation.
    Start(u32),
    /// An attempt of operation `op` reaches the server.
    AtServer(u32),
    /// The server's answer to operation `op` reaches its client.
    Reply(u32, Answer<'a>),
    /// Operation `op`'s wait ends.
    Wake(u32),
    /// The sampler's turn.
    Sample,
}

struct Live<'a, G, L> {
    machine: RetryMachine<Pcg64Mcg, Unlimited, &'a G, &'a L>,
    client: u32,
    started: u64,
    held: u32,
}

fn at(t: u64) -> Instant {
    Instant::from_nanos(t)
}

/// `d` in nanoseconds, saturating.
#[must_use]
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs the clients of `setup` against `server`. Client `c` belongs to process
/// `p = c / clients_per_process` and uses `gates[p % gates.len()]` and
/// `limiters[p % limiters.len()]` (one element: shared by all; one per process: one each).
/// `sample(t, limiters)` is called every [`Setup::sample_every`] from 0 while operations start.
///
/// # Panics
///
/// If `gates` or `limiters` is empty, or the machine misbehaves (a misplaced event, an
/// unexpected decision).
pub fn run<'a, G: Gate, L: RateLimiter>(
    setup: &Setup,
    gates: &[G],
    limiters: &[L],
    mut server: impl FnMut(u64) -> Answer<'a>,
    mut sample: impl FnMut(u64, &[L]),
) -> Trace {
    assert!(
        !gates.is_empty() && !limiters.is_empty() && setup.clients_per_process > 0,
        "a gate, a limiter and a client per process at least"
    );
    let interval = nanos(setup.interval);
    let horizon = nanos(setup.horizon);
    let mut net = Network::herd(rng(setup.seed, &[0]));
    let mut queue = Queue::default();
    for c in 0..setup.clients {
        let phase = (unit(&mut rng(setup.seed, &[1, u64::from(c)])) * interval as f64) as u64;
        queue.at(phase.min(interval.saturating_sub(1)), Ev::Start(c));
    }
    let sample_every = setup.sample_every.map(nanos).filter(|&s| s > 0);
    if sample_every.is_some() {
        queue.at(0, Ev::Sample);
    }
    // Boxed: a fleet starts a million operations, and an ended one leaves only a pointer.
    let mut live: Vec<Option<Box<Live<'_, G, L>>>> = Vec::new();
    let mut trace = Trace {
        arrivals: Vec::new(),
        ops: Vec::new(),
    };
    let mut ended: Vec<Option<Op>> = Vec::new();

    while let Some((t, ev)) = queue.pop() {
        let id = match ev {
            Ev::Start(c) => {
                let id = u32::try_from(live.len()).expect("fewer than 2^32 operations");
                let process = (c / setup.clients_per_process) as usize;
                let (gate, limiter) = (
                    &gates[process % gates.len()],
                    &limiters[process % limiters.len()],
                );
                live.push(Some(Box::new(Live {
                    machine: RetryMachine::with_overload(
                        setup.policy,
                        Request::new(Method::Get),
                        rng(setup.seed, &[2, u64::from(id)]),
                        Unlimited,
                        gate,
                        limiter,
                        at(t),
                    ),
                    client: c,
                    started: t,
                    held: 0,
                })));
                ended.push(None);
                if t + interval < horizon {
                    queue.at(t + interval, Ev::Start(c));
                }
                id
            }
            Ev::AtServer(id) => {
                let answer = server(t);
                trace.arrivals.push(Arrival {
                    at: t,
                    status: answer.status,
                });
                queue.at(t + net.hop(), Ev::Reply(id, answer));
                continue;
            }
            Ev::Reply(id, answer) => {
                let op = live_op(&mut live, id);
                op.machine
                    .handle(at(t), Event::Response(answer.response(t)))
                    .expect("a reply for the attempt in flight");
                id
            }
            Ev::Wake(id) => id,
            Ev::Sample => {
                sample(t, limiters);
                if let Some(every) = sample_every {
                    if t + every < horizon {
                        queue.at(t + every, Ev::Sample);
                    }
                }
                continue;
            }
        };
        // Act on the operation's next decision at `t`.
        let op = live_op(&mut live, id);
        match op.machine.poll(at(t)) {
            Decision::Send { .. } => {
                op.machine
                    .handle(at(t), Event::AttemptStarted)
                    .expect("the machine asked to send");
                queue.at(t + net.hop(), Ev::AtServer(id));
            }
            Decision::Wait { until, reason, .. } => {
                if matches!(
                    reason.source,
                    DelaySource::OriginPaused | DelaySource::RateLimited
                ) {
                    op.held += 1;
                }
                queue.at(nanos(until.as_duration()), Ev::Wake(id));
            }
            Decision::Return(outcome) | Decision::GiveUp(outcome) => {
                let done = Op {
                    client: op.client,
                    started: op.started,
                    ended: t,
                    outcome,
                    held: op.held,
                };
                if let Some(slot) = ended.get_mut(id as usize) {
                    *slot = Some(done);
                }
                if let Some(slot) = live.get_mut(id as usize) {
                    *slot = None;
                }
            }
            other => panic!("operation {id}: unexpected decision {other:?}"),
        }
    }
    trace.ops = ended
        .into_iter()
        .map(|o| o.expect("every operation ended"))
        .collect();
    trace
}

fn live_op<'l, 'a, G, L>(
    live: &'l mut [Option<Box<Live<'a, G, L>>>],
    id: u32,
) -> &'l mut Live<'a, G, L> {
    live.get_mut(id as usize)
        .and_then(Option::as_mut)
        .expect("an operation in flight")
}
