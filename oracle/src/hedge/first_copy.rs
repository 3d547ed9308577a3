//! The first copy sent before the machine ([`HedgeMachine::first_copy`]): for the scenario's
//! policy, request, start, budget and latencies, with no gate or limiter to ask,
//!
//! - it sends at once exactly when the machine's first poll is a `Send` of copy 1, with the
//!   same timeout; when it does not, the machine it hands back is the one `with_budget` makes;
//! - the budget and the latencies hear the same from it as from that `Send` and its
//!   `Started`, and the machine it makes is that machine, state for state;
//! - it waits until the machine's `Wait` says (or less, only when a copy is due at once);
//! - for each response the scenario holds, answered by copy 1 at three instants (at once,
//!   later, past its timeout): a final one ends the operation with the machine's outcome and
//!   the machine's calls; any other leaves everything untold, and the machine made then takes
//!   the answer as the machine that sent the copy does.

use core::time::Duration;

use backstop_core::{
    HedgeDecision, HedgeEvent, HedgeMachine, HedgeTrigger, Instant, NoGate, NoRateLimiter, Policy,
};

use super::books::{muted, Books, Samples};
use super::decode::{Action, Scenario};
use super::{made, parts, Machine};
use crate::machine::{event_of, Action as RetryAction};

/// The most responses of a scenario tried.
const RESPONSES: usize = 4;

/// Runs the checks on `s` under `policy`.
pub(super) fn run(s: &Scenario, policy: Policy) {
    let trial = match Trial::new(s, policy) {
        Ok(trial) => trial,
        // Not sent: the machine handed back is the one `with_budget` makes, and its own
        // first poll sends nothing either.
        Err(machines) => {
            let (mut fresh, back) = *machines;
            assert_eq!(format!("{back:?}"), format!("{fresh:?}"));
            assert!(
                !matches!(fresh.poll(s.start), HedgeDecision::Send { copy: 1, .. }),
                "the machine sends a first copy at once where `first_copy` does not"
            );
            return;
        }
    };
    // The wait, against the machine's own next decision (observed on a clone, muted).
    let decided = muted(&trial.books.0, &trial.samples.0, || {
        trial.machine.clone().poll(s.start)
    });
    let until = trial.first.wait_until();
    match decided {
        HedgeDecision::Wait { until: its, .. } if until == its => {}
        // A copy due at once: the driver's wait ends at once, and the machine decides.
        HedgeDecision::Wait { .. } | HedgeDecision::Send { copy: 2, .. } if until <= s.start => {}
        other => panic!("`first_copy` waits until {until:?} where the machine decided {other:?}"),
    }
    // The answers: each response the scenario holds, at once, later, and past the timeout.
    let responses = s.steps.iter().filter_map(|step| match &step.action {
        Action::Answer(_, answer @ RetryAction::Response { .. }) => Some(answer),
        _ => None,
    });
    let timeout = trial.first.timeout();
    for answer in responses.take(RESPONSES) {
        for after in [Duration::ZERO, timeout / 2, timeout.saturating_mul(2)] {
            let now = s.start.saturating_add(after);
            let (response, _) = event_of(answer, &policy);
            let backstop_core::Event::Response(response) = response else {
                unreachable!("a response action gives a response");
            };
            // Each trial starts afresh: the budget and the tracker are shared by a machine's
            // clones.
            let Ok(t) = Trial::new(s, policy) else {
                unreachable!("sent once, sent again");
            };
            t.answer(now, response);
        }
    }
}

/// One operation started both ways: the machine that sent copy 1 itself, and `first_copy`,
/// each with its own budget and tracker.
struct Trial {
    machine: Machine,
    books: (Books, Books),
    samples: (Samples, Samples),
    first: backstop_core::FirstCopy<rand_pcg::Pcg64Mcg, Books, Samples>,
}

impl Trial {
    /// Starts both; or, when `first_copy` did not send, the machine `with_budget` made and the
    /// one `first_copy` handed back, neither polled.
    fn new(s: &Scenario, policy: Policy) -> Result<Self, Box<(Machine, Machine)>> {
        let (mut machine, books, samples) = made(s, policy);
        let (rng, first_books, first_samples) = parts(s);
        let first = match HedgeMachine::first_copy(
            policy,
            s.request,
            rng,
            first_books.clone(),
            first_samples.clone(),
            NoGate,
            NoRateLimiter,
            s.start,
        ) {
            Ok(first) => first,
            Err(back) => return Err(Box::new((machine, back))),
        };
        let HedgeDecision::Send {
            copy: 1,
            timeout,
            trigger: HedgeTrigger::First,
        } = machine.poll(s.start)
        else {
            panic!(
                "`first_copy` sent a copy the machine does not send at {:?}",
                s.start
            );
        };
        assert_eq!(first.timeout(), timeout, "the first copy's timeout");
        assert_eq!(first.sent_at(), s.start);
        machine
            .handle(s.start, HedgeEvent::Started { copy: 1 })
            .expect("the copy the machine just decided to send starts");
        let trial = Trial {
            machine,
            books: (books, first_books),
            samples: (samples, first_samples),
            first,
        };
        trial.same_calls("the first copy's start");
        assert_eq!(
            format!("{:?}", trial.first.clone().into_machine()),
            format!("{:?}", trial.machine),
            "the machine `into_machine` makes is the one that sent copy 1"
        );
        Ok(trial)
    }

    /// The budget and the tracker heard the same from both.
    fn same_calls(&self, when: &str) {
        assert_eq!(
            format!("{:?}", self.books.0),
            format!("{:?}", self.books.1),
            "the budget after {when}"
        );
        assert_eq!(
            self.samples.0.recorded(),
            self.samples.1.recorded(),
            "the latencies after {when}"
        );
    }

    /// Copy 1 answers `response` at `now`, both ways.
    fn answer(mut self, now: Instant, response: backstop_core::Response<'_>) {
        let event = HedgeEvent::Response { copy: 1, response };
        self.machine
            .handle(now, event)
            .expect("copy 1 is in flight");
        let decided = self.machine.poll(now);
        let told = (format!("{:?}", self.books.1), self.samples.1.recorded());
        match self.first.clone().answered(now, &response) {
            Ok(done) => {
                assert_eq!(
                    decided,
                    HedgeDecision::Return(done),
                    "{response:?} at {now:?}"
                );
                self.same_calls("a final answer");
            }
            // Not final (the machine may still end: nothing more may be sent).
            Err(first) => {
                let untold = (format!("{:?}", self.books.1), self.samples.1.recorded());
                assert_eq!(untold, told, "`answered` told something of {response:?}");
                let mut machine = first.into_machine();
                machine.handle(now, event).expect("copy 1 is in flight");
                assert_eq!(machine.poll(now), decided, "{response:?} at {now:?}");
                assert_eq!(format!("{machine:?}"), format!("{:?}", self.machine));
                self.same_calls("a non-final answer");
            }
        }
    }
}
