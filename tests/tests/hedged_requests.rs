//! Hedged requests over real loopback HTTP, through every async front door (the tower layer
//! on smol and on tokio, the reqwest middleware): a stalled copy is cancelled (its connection
//! closed) and the fast copy's body is the one returned; a non-final answer sends the next
//! copy at once; a request that could not be retried is not hedged; a budget denial
//! suppresses the copy. Blocking ureq does not hedge (its client sends one request at a time
//! per call): it retries under the same policy, which the last test shows.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backstop::classify::{AttemptOutcome, ResponseClass};
use backstop::hedging::{CancelReason, HedgeTrigger};
use backstop::{
    Abort, EventKind, GateConfig, Hedging, OriginGates, Policy, RatioBudget, Retrier, StopReason,
};
use backstop_tests::adapters::{Adapter, Answer, Clock, Failure};
use backstop_tests::events::recorded;
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

/// The async front doors: the ones that hedge.
const HEDGING: [Adapter; 3] = [Adapter::TowerSmol, Adapter::TowerTokio, Adapter::Reqwest];

fn hedging(delay: Duration, copies: u32) -> Policy {
    hedging_with_timeout(Duration::from_secs(10), delay, copies)
}

/// Hedged `copies` times `delay` apart, each copy timing out after `timeout`, 20 s in all.
fn hedging_with_timeout(timeout: Duration, delay: Duration, copies: u32) -> Policy {
    Policy::builder()
        .attempt_timeout(timeout)
        .max_elapsed(Duration::from_secs(20))
        .hedging(Hedging::fixed(delay).max_attempts(copies))
        .build()
        .expect("a valid policy")
}

fn answer(adapter: Adapter, retrier: &Retrier, request: TestRequest) -> Answer {
    let run = adapter.run(retrier, request, Clock::Real);
    match run.result {
        Ok(answer) => answer,
        Err(failure) => panic!("{adapter:?}: no response: {failure:?}"),
    }
}

#[test]
fn a_stalled_copy_is_cancelled_and_the_fast_copys_body_is_returned() {
    for adapter in HEDGING {
        // The first copy's request is never answered; the second is at once.
        let server = Server::start([
            Action::HangUntilClosed,
            Reply::status(200).body("fast").into(),
        ]);
        let (retrier, events) = recorded(Retrier::new(hedging(Duration::from_millis(50), 2)));
        let answer = answer(adapter, &retrier, TestRequest::get(server.url("/tail")));

        assert_eq!(answer.status, 200, "{adapter:?}");
        assert_eq!(answer.body.as_deref(), Ok(&b"fast"[..]), "{adapter:?}");
        let hedged = answer.hedged.expect("a hedged operation says so");
        assert_eq!(
            (hedged.winner, hedged.cancelled, hedged.outcome.attempts),
            (Some(2), 1, 2),
            "{adapter:?}: {hedged:?}"
        );
        assert_eq!(answer.outcome.reason, StopReason::FinalStatus);
        assert_eq!(server.requests(), 2, "{adapter:?}");
        // Dropping the stalled copy closed its connection.
        assert!(
            server.wait_for_closed_by_client(1, Duration::from_secs(10)),
            "{adapter:?}: the stalled copy's connection stayed open"
        );
        let events = events.all();
        let sent: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                EventKind::CopySent { copy, trigger, .. } => Some((*copy, *trigger)),
                _ => None,
            })
            .collect();
        assert_eq!(
            sent,
            [
                (1, HedgeTrigger::First),
                (2, HedgeTrigger::Delay(Duration::from_millis(50)))
            ],
            "{adapter:?}"
        );
        assert!(
            events.iter().any(|e| matches!(
                e,
                EventKind::CopyCancelled {
                    copy: 1,
                    reason: CancelReason::Superseded { winner: 2 },
                    ..
                }
            )),
            "{adapter:?}: {events:?}"
        );
    }
}

/// An event with its times left out: the same operation run twice takes different times.
fn timeless(event: &EventKind) -> EventKind {
    let mut event = *event;
    match &mut event {
        EventKind::AttemptEnded { took, elapsed, .. } => {
            *took = Duration::ZERO;
            *elapsed = Duration::ZERO;
        }
        EventKind::CopySent { elapsed, .. } => *elapsed = Duration::ZERO,
        EventKind::Finished { outcome } => outcome.elapsed = Duration::ZERO,
        _ => {}
    }
    event
}

/// Runs a hedged GET (hedging delay an hour, 3 copies) of a server answering `replies`
/// through `adapter` twice: without gates, where the first copy goes out before the hedging
/// machine is made, and with origin gates, where the machine is made first (the gate is asked
/// before the copy). Checks that both give the same answer status, outcome and events (their
/// times left out), and returns the answer and the events of the first run.
fn without_and_with_gates(adapter: Adapter, replies: Vec<Action>) -> (Answer, Vec<EventKind>) {
    let mut seen = Vec::new();
    for gated in [false, true] {
        let server = Server::start(replies.clone());
        let retrier = Retrier::new(hedging(Duration::from_secs(3600), 3));
        let retrier = if gated {
            let gates = OriginGates::new(GateConfig::new()).expect("a valid config");
            retrier.origin_gates(Arc::new(gates))
        } else {
            retrier
        };
        let (retrier, events) = recorded(retrier);
        let answer = answer(adapter, &retrier, TestRequest::get(server.url("/hedged")));
        assert_eq!(
            server.requests(),
            replies.len(),
            "{adapter:?}, gated: {gated}"
        );
        let events: Vec<_> = events.all().iter().map(timeless).collect();
        seen.push((answer, events));
    }
    let (first, second) = (&seen[0], &seen[1]);
    let timeless_outcome = |a: &Answer| {
        let mut outcome = a.outcome;
        outcome.elapsed = Duration::ZERO;
        (a.status, outcome)
    };
    assert_eq!(
        (timeless_outcome(&first.0), &first.1),
        (timeless_outcome(&second.0), &second.1),
        "{adapter:?}: first copy alone, then with the machine"
    );
    seen.swap_remove(0)
}

/// The usual hedged success: the first copy answers before the hedging delay. The front doors
/// send that copy before making the hedging machine (which they make only for what the copy
/// alone does not settle); the operation must end as the machine ends it.
#[test]
fn a_first_copy_answered_before_the_delay_ends_as_the_machine_ends_it() {
    for adapter in HEDGING {
        let replies = vec![Reply::status(200).body("first").into()];
        let (answer, events) = without_and_with_gates(adapter, replies);
        assert_eq!(answer.status, 200, "{adapter:?}");
        assert_eq!(answer.body.as_deref(), Ok(&b"first"[..]), "{adapter:?}");
        let hedged = answer.hedged.expect("a hedged operation says so");
        let expected = (Some(1), 0, 0, None, 1, StopReason::FinalStatus);
        let got = (
            hedged.winner,
            hedged.cancelled,
            hedged.suppressed,
            hedged.suppressed_by,
            hedged.outcome.attempts,
            hedged.outcome.reason,
        );
        assert_eq!(got, expected, "{adapter:?}");
        assert_eq!(hedged.outcome, answer.outcome, "{adapter:?}");
        assert_eq!(answer.outcome.last, Some(AttemptOutcome::Response(200)));
        assert!(
            matches!(
                events.as_slice(),
                [
                    EventKind::CopySent {
                        copy: 1,
                        trigger: HedgeTrigger::First,
                        ..
                    },
                    EventKind::AttemptEnded {
                        attempt: 1,
                        result: AttemptOutcome::Response(200),
                        ..
                    },
                    EventKind::Hedged {
                        winner: Some(1),
                        cancelled: 0,
                        suppressed: 0,
                        suppressed_by: None,
                    },
                    EventKind::Finished { .. },
                ]
            ),
            "{adapter:?}: {events:?}"
        );
    }
}

/// A first copy's retryable answer before the hedging delay: the machine is made of the first
/// copy and sends the next copy at once, as a machine that sent the first copy itself does.
#[test]
fn a_first_copys_retryable_answer_goes_on_as_the_machine_goes_on() {
    for adapter in HEDGING {
        let replies = vec![
            Reply::status(503).into(),
            Reply::status(200).body("second").into(),
        ];
        let (answer, events) = without_and_with_gates(adapter, replies);
        assert_eq!(answer.status, 200, "{adapter:?}");
        let hedged = answer.hedged.expect("a hedged operation says so");
        assert_eq!((hedged.winner, hedged.outcome.attempts), (Some(2), 2));
        assert!(
            matches!(
                events.as_slice(),
                [
                    EventKind::CopySent { copy: 1, .. },
                    EventKind::AttemptEnded {
                        attempt: 1,
                        result: AttemptOutcome::Response(503),
                        ..
                    },
                    EventKind::CopySent {
                        copy: 2,
                        trigger: HedgeTrigger::Answer { copy: 1, .. },
                        ..
                    },
                    EventKind::AttemptEnded {
                        attempt: 2,
                        result: AttemptOutcome::Response(200),
                        ..
                    },
                    EventKind::Hedged {
                        winner: Some(2),
                        ..
                    },
                    EventKind::Finished { .. },
                ]
            ),
            "{adapter:?}: {events:?}"
        );
    }
}

/// An abort while the first copy is in flight (before the hedging delay, before any machine
/// is made) ends the operation as aborted: the copy is dropped, nothing more is sent, and the
/// events say so, as for an abort after the machine took over. An abort before the first copy
/// sends nothing.
#[test]
fn an_abort_during_the_first_copy_ends_the_operation_and_sends_nothing_more() {
    for adapter in HEDGING {
        let server = Arc::new(Server::always(Action::Hang));
        let abort = Abort::new();
        let aborter = server.abort_once_requests_arrive(1, &abort);
        let (retrier, events) = recorded(Retrier::new(hedging(Duration::from_secs(3600), 3)));
        let request = TestRequest::get(server.url("/hang")).abort_on(&abort);
        let run = adapter.run(&retrier, request, Clock::Real);
        assert!(
            aborter.join().expect("the aborter"),
            "{adapter:?}: no request"
        );
        let Err(Failure::Aborted(outcome)) = run.result else {
            panic!("{adapter:?}: expected aborted, got {run:?}");
        };
        assert_eq!((outcome.attempts, outcome.reason), (1, StopReason::Aborted));
        assert_eq!(server.requests(), 1, "{adapter:?}");
        let events = events.all();
        assert!(
            events.iter().any(|e| matches!(
                e,
                EventKind::CopyCancelled {
                    copy: 1,
                    reason: CancelReason::Aborted,
                    ..
                }
            )),
            "{adapter:?}: {events:?}"
        );
        assert!(
            matches!(
                events.last(),
                Some(EventKind::Finished { outcome }) if outcome.reason == StopReason::Aborted
            ),
            "{adapter:?}: {events:?}"
        );

        // Aborted before the operation starts: nothing is sent.
        let server = Server::always(Action::Hang);
        let abort = Abort::new();
        abort.abort();
        let request = TestRequest::get(server.url("/never")).abort_on(&abort);
        let run = adapter.run(&retrier, request, Clock::Real);
        let Err(Failure::Aborted(outcome)) = run.result else {
            panic!("{adapter:?}: expected aborted, got {run:?}");
        };
        assert_eq!((outcome.attempts, outcome.reason), (0, StopReason::Aborted));
        assert_eq!(server.requests(), 0, "{adapter:?}");
    }
}

/// The response hook sees each response once, whether the first copy's answer ends the
/// operation there or the hedging machine takes it over (a 503 sends the next copy).
#[test]
fn the_response_hook_sees_each_copys_answer_once() {
    for adapter in HEDGING {
        let server = Server::start([
            Reply::status(503).into(),
            Reply::status(200).body("second").into(),
        ]);
        let seen = Arc::new(AtomicU32::new(0));
        let counted = seen.clone();
        let retrier =
            Retrier::new(hedging(Duration::from_secs(3600), 3)).classify_response(move |_| {
                counted.fetch_add(1, Ordering::Relaxed);
                ResponseClass::ByStatus
            });
        let answer = answer(adapter, &retrier, TestRequest::get(server.url("/busy")));
        assert_eq!(answer.status, 200, "{adapter:?}");
        assert_eq!(server.requests(), 2, "{adapter:?}");
        assert_eq!(
            seen.load(Ordering::Relaxed),
            2,
            "{adapter:?}: one call per response"
        );
    }
}

#[test]
fn a_retryable_answer_sends_the_next_copy_at_once() {
    for adapter in HEDGING {
        let server = Server::start([
            Reply::status(503).into(),
            Reply::status(200).body("second").into(),
        ]);
        // A delay far longer than the test: only the 503 can send the second copy.
        let (retrier, events) = recorded(Retrier::new(hedging(Duration::from_secs(3600), 3)));
        let answer = answer(adapter, &retrier, TestRequest::get(server.url("/busy")));

        assert_eq!(
            (answer.status, answer.body.as_deref()),
            (200, Ok(&b"second"[..])),
            "{adapter:?}"
        );
        let hedged = answer.hedged.expect("hedged");
        assert_eq!((hedged.winner, hedged.cancelled), (Some(2), 0));
        let events = events.all();
        assert!(
            events.iter().any(|e| matches!(
                e,
                EventKind::CopySent {
                    copy: 2,
                    trigger: HedgeTrigger::Answer {
                        copy: 1,
                        outcome: AttemptOutcome::Response(503),
                        floor: None
                    },
                    ..
                }
            )),
            "{adapter:?}: {events:?}"
        );
        assert_eq!(server.requests(), 2);
    }
}

#[test]
fn when_every_copy_fails_the_last_response_is_returned_with_its_reason() {
    for adapter in HEDGING {
        let server = Server::always(Reply::status(503).body("busy"));
        let retrier = Retrier::new(hedging(Duration::from_secs(3600), 3));
        let answer = answer(adapter, &retrier, TestRequest::get(server.url("/down")));

        assert_eq!(
            (answer.status, answer.body.as_deref()),
            (503, Ok(&b"busy"[..])),
            "{adapter:?}"
        );
        assert_eq!(
            (answer.outcome.attempts, answer.outcome.reason),
            (3, StopReason::Attempts),
            "{adapter:?}"
        );
        assert_eq!(answer.hedged.expect("hedged").winner, None);
        assert_eq!(server.requests(), 3);
    }
}

#[test]
fn a_post_without_an_idempotency_key_is_sent_once_not_hedged() {
    for adapter in HEDGING {
        let server = Server::always(Reply::status(503));
        let retrier = Retrier::new(hedging(Duration::from_millis(1), 3));
        let answer = answer(
            adapter,
            &retrier,
            TestRequest::post(server.url("/order")).body("x"),
        );

        assert_eq!(answer.status, 503, "{adapter:?}");
        assert_eq!(
            (answer.outcome.attempts, answer.outcome.reason),
            (1, StopReason::NoIdempotencyKey),
            "{adapter:?}"
        );
        assert!(answer.hedged.is_none(), "{adapter:?}");
        assert_eq!(server.requests(), 1);
    }
}

#[test]
fn a_keyed_post_is_retried_not_hedged_so_it_never_meets_its_own_409() {
    for adapter in HEDGING {
        // A server that follows the Idempotency-Key draft: the first request with the key is
        // processed (slowly) and creates the order; a concurrent repeat of the key is told 409
        // Conflict at once. A backup copy would be that repeat.
        let server = Server::start([
            Reply::status(201)
                .body("made")
                .delay(Duration::from_millis(300))
                .into(),
            Reply::status(409).body("in progress").into(),
        ]);
        let retrier = Retrier::new(hedging(Duration::from_millis(20), 2));
        let request = TestRequest::post(server.url("/order"))
            .idempotency_key("order-7")
            .body("x");
        let answer = answer(adapter, &retrier, request);

        assert_eq!(answer.status, 201, "{adapter:?}");
        assert_eq!(answer.body.as_deref(), Ok(&b"made"[..]), "{adapter:?}");
        assert!(answer.hedged.is_none(), "{adapter:?}: {:?}", answer.hedged);
        assert_eq!(
            (answer.outcome.attempts, answer.outcome.reason),
            (1, StopReason::FinalStatus),
            "{adapter:?}"
        );
        assert_eq!(server.requests(), 1, "{adapter:?}");
    }
}

#[test]
fn a_keyed_post_under_a_hedging_policy_is_retried_with_the_same_key() {
    for adapter in HEDGING {
        let server = Server::start([
            Reply::status(503).header("Retry-After", "0").into(),
            Reply::status(201).body("made").into(),
        ]);
        let retrier = Retrier::new(hedging(Duration::from_millis(20), 2));
        let request = TestRequest::post(server.url("/order"))
            .idempotency_key("order-7")
            .body("x");
        let answer = answer(adapter, &retrier, request);

        assert_eq!(answer.status, 201, "{adapter:?}");
        assert!(answer.hedged.is_none(), "{adapter:?}");
        assert_eq!(answer.outcome.attempts, 2, "{adapter:?}");
        let keys: Vec<_> = server
            .recorded()
            .iter()
            .map(|r| r.header("idempotency-key").map(<[u8]>::to_vec))
            .collect();
        assert_eq!(keys, [Some(b"order-7".to_vec()), Some(b"order-7".to_vec())]);
    }
}

#[test]
fn a_hedged_copys_timeout_goes_through_the_classification_override() {
    for adapter in HEDGING {
        let server = Server::always(Action::Hang);
        // The backup's delay is past the timeout: only an answer (the timeout) could send it.
        let policy = hedging_with_timeout(Duration::from_millis(200), Duration::from_secs(5), 3);
        let retrier = Retrier::new(policy).classify(|kind, _| {
            (kind == backstop::ErrorKind::Timeout)
                .then_some(backstop::classify::ErrorClass::Permanent)
        });
        let run = adapter.run(&retrier, TestRequest::get(server.url("/slow")), Clock::Real);

        let context = format!("{adapter:?}: {run:?}");
        assert!(matches!(run.result, Err(Failure::TimedOut(_))), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::PermanentError),
            "{context}"
        );
        assert_eq!(server.requests(), 1, "{context}");
    }
}

#[test]
fn every_hedged_copy_that_times_out_ends_with_an_attempt_ended_event() {
    for adapter in HEDGING {
        let server = Server::always(Action::Hang);
        let policy = hedging_with_timeout(Duration::from_millis(100), Duration::from_secs(5), 2);
        let (retrier, events) = recorded(Retrier::new(policy));
        let run = adapter.run(&retrier, TestRequest::get(server.url("/slow")), Clock::Real);

        let context = format!("{adapter:?}: {run:?}");
        assert!(matches!(run.result, Err(Failure::TimedOut(_))), "{context}");
        let ended: Vec<_> = events
            .all()
            .into_iter()
            .filter_map(|e| match e {
                EventKind::AttemptEnded {
                    attempt,
                    result: AttemptOutcome::Error(e),
                    ..
                } => Some((attempt, e.kind)),
                _ => None,
            })
            .collect();
        assert_eq!(
            ended,
            [
                (1, backstop::ErrorKind::Timeout),
                (2, backstop::ErrorKind::Timeout)
            ],
            "{context}"
        );
    }
}

#[test]
fn a_hedged_wait_for_retry_after_takes_no_real_time_on_virtual_time() {
    for adapter in HEDGING {
        let server = Server::start([
            Reply::status(503).header("Retry-After", "3").into(),
            Reply::status(200).body("ok").into(),
        ]);
        let retrier = Retrier::new(hedging(Duration::from_secs(5), 2));
        let run = adapter.run(
            &retrier,
            TestRequest::get(server.url("/busy")),
            Clock::Virtual,
        );

        let context = format!("{adapter:?}: {run:?}");
        assert_eq!(run.status(), Some(200), "{context}");
        assert_eq!(run.outcome().attempts, 2, "{context}");
        // The 3 s floor was waited on the virtual clock: skipped, not slept.
        assert!(run.skipped >= Duration::from_millis(2900), "{context}");
    }
}

#[test]
fn a_budget_denial_suppresses_the_copy_and_the_first_runs_on() {
    for adapter in HEDGING {
        let server = Server::always(
            Reply::status(200)
                .body("slow")
                .delay(Duration::from_millis(300)),
        );
        // No retries at all: every copy after the first is denied.
        let budget = RatioBudget::new(0, 0, Duration::from_secs(10)).expect("a valid budget");
        let retrier = Retrier::new(hedging(Duration::from_millis(20), 3)).budget(Arc::new(budget));
        let answer = answer(adapter, &retrier, TestRequest::get(server.url("/slow")));

        assert_eq!(answer.body.as_deref(), Ok(&b"slow"[..]), "{adapter:?}");
        let hedged = answer.hedged.expect("hedged");
        assert_eq!(
            (
                hedged.winner,
                hedged.outcome.attempts,
                hedged.suppressed,
                hedged.suppressed_by
            ),
            (Some(1), 1, 2, Some(StopReason::Budget)),
            "{adapter:?}"
        );
        assert_eq!(server.requests(), 1);
    }
}

#[test]
fn blocking_ureq_retries_instead_of_hedging() {
    let server = Server::start([Reply::status(503).into(), Reply::status(200).into()]);
    let retrier = Retrier::new(hedging(Duration::from_millis(1), 3));
    let answer = answer(Adapter::Ureq, &retrier, TestRequest::get(server.url("/x")));
    assert_eq!(answer.status, 200);
    assert!(answer.hedged.is_none());
    // The policy's own retries (its max_attempts, its backoff) applied.
    assert_eq!(answer.outcome.attempts, 2);
}
