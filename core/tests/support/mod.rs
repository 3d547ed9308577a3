//! A virtual-time driver for the machine, shared by the core's integration tests.
#![allow(dead_code)]

use core::time::Duration;

use backstop_core::{
    AttemptError, Budget, Decision, ErrorKind, Event, Gate, Instant, Jitter, Method, NoRateLimiter,
    OriginGate, Policy, Request, Response, RetryMachine, Unlimited,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// A machine on virtual time, with the decisions it made.
pub struct Sim {
    pub machine: RetryMachine<Pcg64Mcg>,
    pub now: Instant,
}

impl Sim {
    pub fn new(policy: Policy, request: Request) -> Self {
        Sim::seeded(policy, request, 7)
    }

    pub fn seeded(policy: Policy, request: Request, seed: u64) -> Self {
        Sim {
            machine: RetryMachine::new(
                policy,
                request,
                Pcg64Mcg::seed_from_u64(seed),
                Instant::ZERO,
            ),
            now: Instant::ZERO,
        }
    }

    pub fn get(policy: Policy) -> Self {
        Sim::new(policy, Request::new(Method::Get))
    }

    pub fn poll(&mut self) -> Decision {
        self.machine.poll(self.now)
    }

    pub fn advance(&mut self, d: Duration) {
        self.now = self.now.saturating_add(d);
    }

    /// Expects a `Send`, starts the attempt, and returns its number and timeout.
    pub fn start(&mut self) -> (u32, Duration) {
        match self.poll() {
            Decision::Send {
                attempt, timeout, ..
            } => {
                self.machine
                    .handle(self.now, Event::AttemptStarted)
                    .expect("a send was pending");
                (attempt, timeout)
            }
            other => panic!("expected Send, got {other:?}"),
        }
    }

    pub fn respond(&mut self, response: Response<'_>) {
        self.machine
            .handle(self.now, Event::Response(response))
            .expect("an attempt was in flight");
    }

    pub fn status(&mut self, status: u16) {
        self.respond(Response::new(status));
    }

    pub fn fail(&mut self, kind: ErrorKind) {
        self.machine
            .handle(self.now, Event::Error(AttemptError::new(kind)))
            .expect("an attempt was in flight");
    }

    /// Expects a `Wait`, jumps to its end, and returns its delay.
    pub fn wait(&mut self) -> Duration {
        match self.poll() {
            Decision::Wait { until, delay, .. } => {
                assert_eq!(until, self.now.saturating_add(delay));
                self.now = until;
                delay
            }
            other => panic!("expected Wait, got {other:?}"),
        }
    }
}

/// A GET machine behind an origin gate, with no budget and no rate limiter.
pub type Gated<'g> = RetryMachine<Pcg64Mcg, Unlimited, &'g OriginGate, NoRateLimiter>;

/// A seeded GET machine behind `gate`, created at `now`, with no budget and no rate limiter.
pub fn gated(policy: Policy, gate: &OriginGate, now: Instant, seed: u64) -> Gated<'_> {
    gated_with_budget(policy, Unlimited, gate, now, seed)
}

/// A seeded GET machine behind `budget` and `gate`, created at `now`, with no rate limiter.
pub fn gated_with_budget<B: Budget, G: Gate>(
    policy: Policy,
    budget: B,
    gate: G,
    now: Instant,
    seed: u64,
) -> RetryMachine<Pcg64Mcg, B, G, NoRateLimiter> {
    RetryMachine::with_overload(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(seed),
        budget,
        gate,
        NoRateLimiter,
        now,
    )
}

pub fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// The defaults without jitter: backoff waits are exact.
pub fn no_jitter() -> Policy {
    Policy::builder().jitter(Jitter::None).build().unwrap()
}

/// The defaults, with no random spread above `Retry-After`: waits are exactly the server's.
pub fn no_spread() -> Policy {
    Policy::builder()
        .retry_after_spread(Duration::ZERO)
        .build()
        .unwrap()
}
