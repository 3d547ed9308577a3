#!/usr/bin/env python3
"""Writes the seed corpora: fuzz/corpus/{retry_after,rate_limit,machine}/seed-*.

Run from anywhere: python3 fuzz/seeds/generate.py. The files are committed; this script says
where they came from. Machine seeds follow the byte layout of
oracle/src/machine/decode.rs (Scenario::decode); hedge-* seeds that of oracle/src/hedge/decode.rs,
overload-* seeds that of oracle/src/overload/decode.rs (every seed is fed to all three checks).
"""
import hashlib
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus")

# Real-world Retry-After shapes, and the junk that servers send.
RETRY_AFTER = [
    b"0", b"1", b"5", b"30", b"60", b"120", b"3600", b"86400", b"0.1", b"0.5", b"1.5",
    b"2.25", b"0.000000001", b"0.0000000019", b"1.123456789123", b"007", b"00000000000000000000001",
    b"18446744073709551615", b"18446744073709551616", b"99999999999999999999999999999",
    b"18446744073709551615.999999999", b" 120", b"120 ", b"\t120\t", b"  0.1  ",
    b"Sun, 06 Nov 1994 08:49:37 GMT", b"Sunday, 06-Nov-94 08:49:37 GMT",
    b"Sun Nov  6 08:49:37 1994", b"Wed, 21 Oct 2015 07:28:00 GMT",
    b"Fri, 31 Dec 9999 23:59:59 GMT", b"Thu, 01 Jan 1970 00:00:00 GMT",
    b"Wed, 31 Dec 1969 23:59:59 GMT", b"Thursday, 01-Jan-70 00:00:00 GMT",
    b"Wednesday, 31-Dec-69 23:59:59 GMT", b"Thu Jan  1 00:00:00 1970", b"Fri Dec 31 23:59:59 9999",
    b"Mon, 29 Feb 2016 12:00:00 GMT", b"Tue, 29 Feb 2100 12:00:00 GMT",
    b"Sun, 06 Nov 1994 08:49:37 UTC", b"Sun, 6 Nov 1994 08:49:37 GMT",
    b"Mon, 06 Nov 1994 08:49:37 GMT", b"Sun, 06 Nov 1994 24:00:00 GMT",
    b"Sun, 06 Nov 1994 08:49:60 GMT", b"sun, 06 nov 1994 08:49:37 gmt",
    b" Sun, 06 Nov 1994 08:49:37 GMT ", b"\tSun, 06 Nov 1994 08:49:37 GMT\r\n",
    b"Sun, 06 Nov 1994 08:49:37 GMT\x00", b"1e30", b"1E3", b"-1", b"+1", b"-0", b"NaN",
    b"nan", b"inf", b"Infinity", b"0x10", b"0b1", b"1_000", b"1,000", b"1, 2", b"1 2",
    b"1.", b".5", b"1..2", b"1.2.3", b"", b" ", b"\t", b"\xff\xfe", b"120\xff",
    b"\xef\xbb\xbf120", b"\xd9\xa1\xd9\xa2", b"\xef\xbc\x91\xef\xbc\x92", b"now", b"later",
    b"Sun, 06 Nov 1994", b"2015-10-21T07:28:00Z", b"1445412480", b"\"120\"", b"120s", b"2m",
]

# RateLimit fields (then, after a newline, a RateLimit-Policy), as APIs send them, and junk.
RATE_LIMIT = [
    b'"default";r=0;t=1', b'"default";r=0;t=10', b'"default";r=50;t=30', b'default;r=0;t=60',
    b'"burst";r=0;t=1, "day";r=0;t=3600', b'"a";r=5;t=1, "b";r=0;t=9', b'"day";r=0\n"day";q=1000;w=86400',
    b'"day";r=0\n"hour";q=100;w=3600, "day";q=1000;w=86400', b'"a";r=0;t=1;pk=:cHsdsRa894==:',
    b'"a";r=0;t=-1', b'"a";r=0;t=1.5', b'"a";r="0";t=1', b'"a";r=0;t', b'"a";r=0;t=1,',
    b'r=0;t=1', b'limit=100, remaining=0, reset=10', b'"a";R=0;t=1', b'  "a";r=0;t=2  ',
    b'\t"a";r=0;t=2', b'(a b);r=0;t=1', b'"a";r=0;t=999999999999999', b'"a";r=0;t=1234567890123456',
    b'%"caf%c3%a9";r=0;t=3', b'%"%ff";r=0;t=3', b'@1700000000;r=0;t=4', b':QQ=:;r=0;t=5',
    b':Q:;r=0;t=5', b':QQ===:;r=0;t=5', b'?1;r=0;t=6', b'"\\"";r=0;t=7', b'', b'\xff',
]

# Machine scenario bytes (see Scenario::decode).
def u16(n): return struct.pack("<H", n)
def u32(n): return struct.pack("<I", n)
def u64(n): return struct.pack("<Q", n)

DEFAULT_POLICY = u16(0)
GET, PUT, POST = 0, 4, 6
SEED = u64(42)
START_ZERO = bytes([0])

# time steps
SAME = bytes([0])
NEXT = bytes([7])
DEADLINE = bytes([9])
def millis(n): return bytes([3]) + u16(n)
def back_secs(n): return bytes([6]) + u16(n)
# actions
POLL = bytes([0])
STARTED = bytes([2])
TIMEPASSED = bytes([6])
ABORT = bytes([7])
def response(status_tag, status_arg, retry_after=None, date=None, rate_limit=None):
    out = bytes([3, status_tag]) + status_arg
    out += bytes([1]) + retry_after if retry_after is not None else bytes([0])
    out += bytes([1]) + date if date is not None else bytes([0])
    out += bytes([0])  # no wall clock
    out += rate_limit if rate_limit is not None else bytes([0])  # < 128: no rate-limit fields
    return out + bytes([2])  # its class: 2..7 by status (0 Retryable, 1 Final)
# rate-limit field sets (see decode_rate_limit): 128 + bits 1 RateLimit, 2 its policy,
# 4 RateLimit-Reset, 8 X-RateLimit-Reset-After, 16 X-RateLimit-Reset.
def ietf_reset(t): return bytes([128 | 1, 1, 0, t])          # "default";r=0;t=T
def ietf_window(w): return bytes([128 | 1 | 2, 3, 0]) + u16(w)  # "day";r=0 + "day";w=W
def reset_after(secs): return bytes([128 | 8, 2, secs])         # X-RateLimit-Reset-After: SECS
def retryable(i): return response(0, bytes([i]))      # 408 425 429 500 502 503 504
def retryable_ra(i, header): return response(0, bytes([i]), header)
def common(i): return response(2, bytes([i]))          # 200 201 204 301 304 400 401 403 404 ...
def error(kind, cls=7): return bytes([5, kind, cls])   # cls 0..4 overrides the class
def hostile(i): return bytes([7, i])                    # index into HOSTILE
def imf(secs_tag_arg): return bytes([4]) + secs_tag_arg
def step(t, a): return t + a

def scenario(policy, method, key, steps, start=START_ZERO):
    return policy + bytes([method, key]) + SEED + start + b"".join(steps)

def policy(set_bits, fields):
    return u16(set_bits) + fields

MACHINE = {
    # The seed's demo: 503 with Retry-After: 0.1 twice, then 200.
    "demo": scenario(DEFAULT_POLICY, GET, 0, [
        step(SAME, POLL), step(SAME, STARTED), step(millis(20), retryable_ra(5, hostile(11))),
        step(NEXT, POLL), step(SAME, STARTED), step(millis(20), retryable_ra(5, hostile(11))),
        step(NEXT, POLL), step(SAME, STARTED), step(millis(20), common(0)), step(SAME, POLL),
    ]),
    "exhaust_attempts": scenario(DEFAULT_POLICY, GET, 0, [
        s for _ in range(5) for s in (step(NEXT, POLL), step(SAME, STARTED),
                                       step(millis(5), retryable(6)))
    ] + [step(SAME, POLL)]),
    "timeouts_to_deadline": scenario(DEFAULT_POLICY, GET, 0, [
        s for _ in range(6) for s in (step(NEXT, POLL), step(SAME, STARTED), step(NEXT, POLL))
    ]),
    "post_without_key": scenario(DEFAULT_POLICY, POST, 0, [
        step(SAME, STARTED), step(millis(3), retryable(5)), step(SAME, POLL), step(SAME, STARTED),
    ]),
    "post_refused_then_reset": scenario(DEFAULT_POLICY, POST, 1, [
        step(SAME, STARTED), step(millis(3), error(1)), step(NEXT, POLL), step(SAME, STARTED),
        step(millis(3), error(3)), step(NEXT, POLL), step(SAME, STARTED),
    ]),
    "post_opted_in_with_key": scenario(policy(128, bytes([1])), POST, 1, [
        step(SAME, STARTED), step(millis(3), error(3)), step(NEXT, POLL), step(SAME, STARTED),
        step(millis(3), common(0)),
    ]),
    "abort_while_waiting": scenario(DEFAULT_POLICY, GET, 0, [
        step(SAME, STARTED), step(millis(3), retryable(2)), step(SAME, POLL),
        step(millis(1), ABORT), step(NEXT, POLL), step(SAME, STARTED),
    ]),
    "abort_in_flight": scenario(DEFAULT_POLICY, PUT, 0, [
        step(SAME, STARTED), step(millis(1), ABORT), step(SAME, POLL),
        step(millis(3), common(0)),
    ]),
    "time_goes_backwards": scenario(DEFAULT_POLICY, GET, 0, [
        step(millis(5000), POLL), step(SAME, STARTED), step(back_secs(100), retryable(0)),
        step(back_secs(1), POLL), step(NEXT, TIMEPASSED), step(SAME, STARTED),
    ]),
    "retry_after_date_with_date_header": scenario(DEFAULT_POLICY, GET, 0, [
        step(SAME, STARTED),
        step(millis(3), response(0, bytes([2]), hostile(14), bytes([7, 14]))),
        step(SAME, POLL), step(NEXT, STARTED),
    ]),
    "retry_after_above_max": scenario(DEFAULT_POLICY, GET, 0, [
        step(SAME, STARTED), step(millis(3), retryable_ra(2, bytes([2, 200]))), step(SAME, POLL),
    ]),
    "retry_after_clamped": scenario(policy(512, bytes([1])), GET, 0, [
        step(SAME, STARTED), step(millis(3), retryable_ra(2, hostile(1))), step(SAME, POLL),
        step(NEXT, POLL),
    ]),
    # An abort meets the state the previous call left: a deadline that `now` reaches but that no
    # decision reported yet does not beat it (found by the fuzzer against an older checker).
    "abort_at_creation_past_deadline": scenario(DEFAULT_POLICY, POST, 0, [
        step(SAME, ABORT), step(SAME, POLL), step(SAME, STARTED),
    ], start=bytes([8])),
    "abort_after_deadline_before_poll": scenario(DEFAULT_POLICY, GET, 0, [
        step(millis(16000), ABORT), step(SAME, POLL), step(DEADLINE, ABORT),
    ]),
    # A 429 whose only signal is a rate-limit field: the reset is the wait's floor.
    "rate_limit_reset_is_a_floor": scenario(DEFAULT_POLICY, GET, 0, [
        step(SAME, STARTED), step(SAME, response(0, bytes([2]), rate_limit=ietf_reset(1))),
        step(NEXT, POLL), step(SAME, STARTED),
        step(SAME, response(0, bytes([2]), rate_limit=ietf_window(2))), step(NEXT, POLL),
        step(SAME, STARTED), step(SAME, response(0, bytes([6]), rate_limit=reset_after(3))),
        step(NEXT, POLL), step(SAME, STARTED), step(SAME, common(0)),
    ]),
    "misuse": scenario(DEFAULT_POLICY, GET, 0, [
        step(SAME, retryable(5)), step(SAME, error(0)), step(SAME, STARTED), step(SAME, STARTED),
        step(DEADLINE, POLL), step(SAME, STARTED),
    ]),
}

# Hedging scenarios (see oracle/src/hedge/decode.rs, Scenario::decode): the retry policy,
# then the hedging policy, the request, seed and start, the latency tracker (its window and the
# samples it holds), the budget's denials, then steps whose events name copies.
def copies(n):  # the max_attempts byte
    return {0: 12, 1: 28, 2: 0, 3: 5, 4: 8, 5: 10, 11: 14}.get(n, 13 | ((n - 6) << 4))
def fixed(ms, n=2, above=False): return bytes([1 | (16 if above else 0), 2]) + u16(ms) + bytes([copies(n)])
def adaptive(load_percent, min_samples, n=2): return bytes([9, load_percent - 1, 2, min_samples, copies(n)])
NO_HEDGING = bytes([0])
WINDOW_30S = bytes([0])
NO_SAMPLES = bytes([0])
def samples(n, base_ms, spread_ms): return bytes([n]) + u16(base_ms * 20) + bytes([0, spread_ms])
GRANT_ALL = bytes([0])
def denials(mask): return bytes([200]) + u32(mask)
# hedging actions (a copy reference byte below 208 is "the natural one": the copy due for a
# start, the n-th in flight for an answer, the n-th to drop for a cancel; 208..239 a raw number
# below 12; 255 then a u32)
H_POLL = bytes([0])
H_STARTED = bytes([5, 0])
def h_started_raw(n): return bytes([5, 255]) + u32(n)
def h_answer(i, resp): return bytes([7, i]) + resp[1:]  # resp: a response() above
def h_error(i, kind, cls=7): return bytes([10, i, kind, cls])
H_CANCELLED = bytes([12, 0])
def h_cancelled_raw(n): return bytes([12, 208 + n])
H_TIMEPASSED = bytes([14])
H_ABORT = bytes([15])
def just_before_next(): return bytes([8])

def hedge(hedging, method, key, steps, policy=DEFAULT_POLICY, tracker=WINDOW_30S + NO_SAMPLES,
          budget=GRANT_ALL, start=START_ZERO):
    return policy + hedging + bytes([method, key]) + SEED + start + tracker + budget + b"".join(steps)

def follow(): return [step(NEXT, H_POLL), step(SAME, H_STARTED)]

HEDGE = {
    # Copy 1 is slow: copy 2 goes out 50 ms later, answers 200 first; copy 1 is cancelled.
    "hedge-slow_copy_superseded": hedge(fixed(50, 3), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), step(NEXT, H_POLL), step(SAME, H_STARTED),
        step(millis(5), h_answer(1, common(0))), step(SAME, H_POLL), step(SAME, H_CANCELLED),
        step(SAME, H_POLL),
    ]),
    # A 503 sends the next copy at once, whose 200 wins.
    "hedge-non_final_answer_sends_at_once": hedge(fixed(200, 3), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), step(millis(10), h_answer(0, retryable(5))),
        step(SAME, H_POLL), step(SAME, H_STARTED), step(millis(10), h_answer(0, common(0))),
        step(SAME, H_POLL), step(SAME, H_CANCELLED), step(SAME, H_POLL),
    ]),
    # A 429 with Retry-After: 1 holds the next copy back until the floor.
    "hedge-retry_after_floor": hedge(fixed(50, 4), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED),
        step(millis(10), h_answer(0, retryable_ra(2, bytes([2, 1])))), step(SAME, H_POLL),
        step(just_before_next(), H_POLL), *follow(), *follow(),
        step(millis(3), h_answer(1, common(8))), step(SAME, H_POLL), step(SAME, H_CANCELLED),
        step(SAME, H_POLL),
    ]),
    # A rate-limit reset on a 429 is a floor too; then every copy fails: the last response.
    "hedge-rate_limit_floor_then_all_fail": hedge(fixed(20, 2), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED),
        step(millis(5), h_answer(0, response(0, bytes([2]), rate_limit=ietf_reset(1)))),
        *follow(), step(millis(5), h_answer(0, retryable(6))), step(SAME, H_POLL),
    ]),
    # Every copy times out, up to the deadline.
    "hedge-timeouts_to_deadline": hedge(fixed(1000, 5), GET, 0,
        [s for _ in range(12) for s in (step(NEXT, H_POLL), step(SAME, H_STARTED),
                                        step(SAME, H_CANCELLED))] + [step(DEADLINE, H_POLL)]),
    # The budget denies copy 3: copies 1 and 2 run on, copy 2's 404 wins.
    "hedge-budget_denies_a_copy": hedge(fixed(10, 4), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), *follow(), step(NEXT, H_POLL),
        step(SAME, H_STARTED), step(millis(3), h_answer(1, common(8))), step(SAME, H_POLL),
        step(SAME, H_CANCELLED), step(SAME, H_POLL),
    ], budget=denials(0b10)),
    # An abort with three copies in flight: every one is cancelled, none sent after.
    "hedge-abort_cancels_every_copy": hedge(fixed(0, 3), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), step(SAME, H_POLL), step(SAME, H_STARTED),
        step(SAME, H_POLL), step(SAME, H_STARTED), step(millis(1), H_ABORT),
        *[s for _ in range(3) for s in (step(SAME, H_POLL), step(SAME, H_CANCELLED))],
        step(SAME, H_POLL), step(SAME, H_STARTED),
    ]),
    # A permanent error (TLS) on copy 2 cancels copy 1.
    "hedge-permanent_error": hedge(fixed(30, 2), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), *follow(), step(millis(2), h_error(1, 8)),
        step(SAME, H_POLL), step(SAME, H_CANCELLED), step(SAME, H_POLL),
    ]),
    # An adaptive delay (5 % extra load) over 20 samples of 10 to 30 ms.
    "hedge-adaptive_delay": hedge(adaptive(5, 10, 3), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), *follow(), *follow(),
        step(millis(2), h_answer(2, common(0))), step(SAME, H_POLL), step(SAME, H_CANCELLED),
        step(SAME, H_POLL), step(SAME, H_CANCELLED), step(SAME, H_POLL),
    ], tracker=WINDOW_30S + samples(20, 10, 20)),
    # Too few samples: no copy on a delay, only after the 503.
    "hedge-adaptive_without_samples": hedge(adaptive(5, 10, 2), GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), step(millis(1000), H_POLL),
        step(millis(100), h_answer(0, retryable(5))), step(SAME, H_POLL), step(SAME, H_STARTED),
    ], tracker=WINDOW_30S + samples(5, 10, 20)),
    # A POST without a key is sent once; with a key it is hedged.
    "hedge-post_without_key_sent_once": hedge(fixed(10, 3), POST, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), step(millis(20), H_POLL),
        step(SAME, h_answer(0, retryable(5))), step(SAME, H_POLL),
    ]),
    "hedge-post_with_key_hedged": hedge(fixed(10, 3), POST, 1, [
        step(SAME, H_POLL), step(SAME, H_STARTED), *follow(), *follow(),
        step(millis(1), h_answer(2, common(1))), step(SAME, H_POLL), step(SAME, H_CANCELLED),
        step(SAME, H_POLL), step(SAME, H_CANCELLED), step(SAME, H_POLL),
    ]),
    # Ten copies at once (A6's cap raised).
    "hedge-ten_copies_at_once": hedge(fixed(0, 10, above=True), GET, 0,
        [s for _ in range(11) for s in (step(SAME, H_POLL), step(SAME, H_STARTED))]
        + [step(millis(1), h_answer(9, common(0)))]
        + [s for _ in range(10) for s in (step(SAME, H_POLL), step(SAME, H_CANCELLED))]),
    # Events for the wrong copies, twice started, a cancel not asked for, time backwards.
    "hedge-misuse": hedge(fixed(10, 3), GET, 0, [
        step(SAME, h_answer(0, common(0))), step(SAME, h_started_raw(2)), step(SAME, H_STARTED),
        step(SAME, H_STARTED), step(SAME, h_cancelled_raw(1)), step(millis(10), h_started_raw(0)),
        step(SAME, h_started_raw(0xffffffff)), step(back_secs(1), H_POLL), step(SAME, H_STARTED),
        step(SAME, h_error(5, 3)), step(SAME, H_TIMEPASSED),
    ]),
    # Without hedging in the policy: one copy.
    "hedge-policy_without_hedging": hedge(NO_HEDGING, GET, 0, [
        step(SAME, H_POLL), step(SAME, H_STARTED), step(millis(5), h_answer(0, retryable(5))),
        step(SAME, H_POLL),
    ]),
}

# Overload scenarios (see oracle/src/overload/decode.rs, Scenario::decode): the retry policy,
# then one byte (bits 0-1 the shared objects: 1 an origin gate, 2 a rate limiter, 0 or 3 both;
# bit 2 fail fast when paused; bits 3-4 the operations less one; bit 5 a gate configuration
# follows, bit 6 a limiter's), those configurations, the seed and start, each operation's
# request (after the first, with its start offset), then steps, each prefixed with the
# operation it drives when there are several. The retry scenario's time steps and actions.
GATE, LIMITER, BOTH = 1, 2, 3
def gate_config(spread=bytes([2]), recheck=bytes([1]), seed=bytes([0]), trip=bytes([0])):
    # spread: [0] none, [1, n] 4n ms, [2] 1 s; recheck: [0, n] n ms, [1] 50 ms, [2, n] 1+n ns;
    # seed: [0] 0, [1, s] s; trip: [0] none, else trip() below.
    return spread + recheck + seed + trip
def trip(tenths, minimum, buckets=10, break_secs=5):
    # ratio tenths/10, minimum throughput, a 30 s window in `buckets`, a break of `break_secs`
    return bytes([1, tenths - 1, minimum - 1, 0, buckets, 1, break_secs])
def limiter_config(start=False, beta_fiftieths=None):
    return bytes([(1 if start else 0) | (0 if beta_fiftieths is None else 2 | ((beta_fiftieths + 4) << 2))])
AT_ONCE = bytes([0])
def after_ms(n): return bytes([1]) + u16(n)

def overload(objects, requests, steps, policy=DEFAULT_POLICY, gate=None, limiter=None,
             fail_fast=False, start=START_ZERO):
    n = len(requests)
    o = objects | (4 if fail_fast else 0) | ((n - 1) << 3)
    o |= (32 if gate is not None else 0) | (64 if limiter is not None else 0)
    out = policy + bytes([o])
    if gate is not None and objects != LIMITER:
        out += gate
    if limiter is not None and objects != GATE:
        out += limiter
    out += SEED + start
    for k, (method, key, offset) in enumerate(requests):
        out += bytes([method, key]) + (offset if k else b"")
    for k, t, a in steps:
        out += (bytes([k]) if n > 1 else b"") + t + a
    return out

def get(offset=AT_ONCE): return (GET, 0, offset)
def send(k, t=SAME): return [(k, t, POLL), (k, SAME, STARTED)]
def ra(secs): return bytes([2, secs])  # Retry-After: SECS
R429, R503 = 2, 5

OVERLOAD = {
    # A 503 with Retry-After: 2 pauses the other two; at the reopening one is the probe, the
    # other awaits it; the probe's 200 opens the gate for all.
    "overload-503_pauses_the_others": overload(GATE, [get(), get(), get()], [
        *send(0), (0, millis(10), retryable_ra(R503, ra(2))), (1, SAME, POLL), (2, SAME, POLL),
        *send(1, NEXT), (2, SAME, POLL), (1, millis(30), common(0)), (2, NEXT, POLL),
        (2, SAME, STARTED), (2, millis(5), common(0)), (0, NEXT, POLL), (0, SAME, STARTED),
        (0, millis(5), common(0)), (0, SAME, POLL), (1, SAME, POLL), (2, SAME, POLL),
    ]),
    # A 429 turns the limiter on: the next sends wait for tokens, the other operation's too.
    "overload-429_turns_the_limiter_on": overload(LIMITER, [get(), get(after_ms(100))], [
        *send(0), (0, millis(10), retryable(R429)), (1, millis(100), POLL), (0, NEXT, POLL),
        (1, NEXT, POLL), (1, SAME, STARTED), (1, millis(20), common(0)), (0, NEXT, POLL),
        (0, NEXT, POLL), (0, SAME, STARTED), (0, millis(20), common(0)), (0, SAME, POLL),
    ]),
    # Both: a 429 with Retry-After: 1 closes the gate and turns the limiter on; at the
    # reopening the probe finds the bucket empty.
    "overload-probe_held_by_the_limiter": overload(BOTH, [get(), get()], [
        *send(0), (0, SAME, retryable_ra(R429, ra(1))), (1, millis(1000), POLL), (1, NEXT, POLL),
        (1, NEXT, POLL), (0, NEXT, POLL), (1, NEXT, POLL), (1, SAME, STARTED),
        (1, millis(5), common(0)), (0, NEXT, POLL), (0, SAME, STARTED), (0, SAME, common(0)),
    ], gate=gate_config(spread=bytes([0])), limiter=limiter_config(start=True)),
    # Fail fast: a new operation to a paused origin gives up at once.
    "overload-fail_fast_when_paused": overload(GATE, [get(), get()], [
        *send(0), (0, SAME, retryable_ra(R503, ra(5))), (1, millis(1), POLL), (1, SAME, STARTED),
        (0, NEXT, POLL),
    ], fail_fast=True),
    # A 2 s deadline: a pause of 3 s gives the other operation up at once, origin_paused.
    "overload-paused_past_the_deadline": overload(GATE, [get(), get(after_ms(500))], [
        *send(0), (0, millis(100), retryable_ra(R429, ra(3))), (1, millis(400), POLL),
        (0, SAME, POLL), (1, DEADLINE, POLL),
    ], policy=policy(2, bytes([2]) + u16(2000))),
    # The failure-ratio trip: half of at least two attempts failed (500s) closes the gate for
    # the break; the probe after it fails again; then it succeeds.
    "overload-trip_and_failed_probe": overload(GATE, [get(), get(), get()], [
        *send(0), (0, millis(5), retryable(3)), *send(1), (1, millis(5), retryable(3)),
        (2, SAME, POLL), *send(2, NEXT), (2, millis(5), retryable(3)), (0, NEXT, POLL),
        (1, NEXT, POLL), *send(0, NEXT), (0, millis(5), common(0)), (1, NEXT, POLL),
        (1, SAME, STARTED), (1, SAME, common(0)),
    ], gate=gate_config(trip=trip(5, 2, break_secs=1))),
    # The same server says Retry-After: 0 on each 503 (a zero back-off): counted by the trip.
    "overload-zero_retry_after_and_the_trip": overload(GATE, [get(), get(), get()], [
        *send(0), (0, millis(5), retryable_ra(R503, ra(0))), *send(1),
        (1, millis(5), retryable_ra(R503, ra(0))), *send(2), (2, millis(5), retryable_ra(R503, ra(0))),
        (0, SAME, POLL), (1, SAME, POLL), (2, SAME, POLL),
    ], gate=gate_config(trip=trip(5, 2))),
    # An exhausted quota ("default";r=0;t=2 on a 429) pauses the origin too.
    "overload-quota_exhausted": overload(GATE, [get(), get()], [
        *send(0), (0, SAME, response(0, bytes([R429]), rate_limit=ietf_reset(2))),
        (1, millis(10), POLL), (1, NEXT, POLL), (1, SAME, STARTED), (1, SAME, common(0)),
    ]),
    # The probe's operation is aborted before it sends: it hands the probe back at once, and
    # the next caller is the probe (it used to wait 5 s, the probe's lease).
    "overload-probe_lease_runs_out": overload(GATE, [get(), get(), get()], [
        *send(0), (0, SAME, retryable_ra(R503, ra(1))), (1, millis(1000), POLL), (1, SAME, ABORT),
        (2, SAME, POLL), (2, NEXT, POLL), (2, millis(5000), POLL), (2, SAME, STARTED),
        (2, SAME, common(0)),
    ], gate=gate_config(spread=bytes([0]))),
    # The probe's operation reaches its 2 s deadline before it sends: it hands the probe back,
    # and the next caller probes; an abort after that calls nothing.
    "overload-probe_unsent_at_the_deadline": overload(GATE, [get(), get(), get(after_ms(1500))], [
        *send(0), (0, SAME, retryable_ra(R503, ra(1))), (1, millis(1000), POLL),
        (1, DEADLINE, POLL), (2, SAME, POLL), (2, SAME, STARTED), (2, millis(5), common(0)),
        (1, SAME, ABORT),
    ], gate=gate_config(spread=bytes([0])), policy=policy(2, bytes([2]) + u16(2000))),
    # Four operations, the clock going back and forth, a timeout for the probe.
    "overload-four_operations_and_a_timeout": overload(BOTH, [get(), get(), (POST, 1, AT_ONCE), get(after_ms(50))], [
        *send(0), *send(1), (0, millis(10), retryable_ra(R503, ra(1))), (2, SAME, POLL),
        (3, back_secs(1), POLL), (1, millis(20), retryable(R429)), (2, NEXT, POLL),
        (2, SAME, STARTED), (2, NEXT, POLL), (3, NEXT, POLL), (3, SAME, STARTED),
        (0, NEXT, POLL), (1, NEXT, POLL), (3, NEXT, TIMEPASSED), (0, NEXT, POLL),
    ]),
}

# A retry scenario under a hedging policy (bit 8192 of the policy's settings, then the
# hedging policy as a hedge scenario encodes it): the retry machine ignores it and retries
# four times, within Policy::worst_case (the larger of the retried and the hedged bounds).
MACHINE["retry_under_a_hedging_policy"] = scenario(policy(8192, fixed(10, 2)), GET, 0, [
    s for _ in range(4) for s in (step(NEXT, POLL), step(SAME, STARTED),
                                   step(millis(5), retryable(5)))
] + [step(NEXT, POLL)])
# Copy 1 times out (1 s), copy 2 goes at once and wins: one latency sample, copy 1's timeout.
HEDGE["hedge-first_copy_timeout_sampled_once"] = hedge(adaptive(25, 10, 3), GET, 0, [
    step(SAME, H_POLL), step(SAME, H_STARTED), step(NEXT, H_POLL), step(NEXT, H_POLL),
    step(SAME, H_CANCELLED), step(SAME, H_POLL), step(SAME, H_STARTED),
    step(millis(3), h_answer(0, common(0))), step(SAME, H_POLL),
], policy=policy(4, bytes([2]) + u16(1000)), tracker=WINDOW_30S + samples(20, 10, 20))

def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)

for v in RETRY_AFTER:
    write("retry_after", hashlib.sha1(v).hexdigest()[:16], v)
for v in RATE_LIMIT:
    write("rate_limit", hashlib.sha1(v).hexdigest()[:16], v)
for name, data in MACHINE.items():
    write("machine", name, data)
for name, data in HEDGE.items():
    write("machine", name, data)
for name, data in OVERLOAD.items():
    write("machine", name, data)
