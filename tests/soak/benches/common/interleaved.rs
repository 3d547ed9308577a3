//! What the per-GET probes (`reqwest_probe`, `tower_probe`, `ureq_probe`) share: their
//! command line, the client thread's CPU clock, the interleaving of the ways, and the table of
//! their samples.

use std::time::{Duration, Instant};

/// The CPU time this thread has used, user and kernel.
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant of the platform.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0);
    Duration::new(t.tv_sec.try_into().unwrap(), t.tv_nsec.try_into().unwrap())
}

/// A reading of the clock the samples are taken on: the thread's CPU time, or wall time
/// since `start`.
pub fn reading(cpu: bool, start: Instant) -> Duration {
    if cpu {
        thread_cpu()
    } else {
        start.elapsed()
    }
}

/// Which of `n` ways the `k`-th GET of `round` goes through: every way in turn, forwards on
/// even rounds and backwards on odd ones, starting one way later every two rounds, so no way
/// always follows the same one.
pub fn way_of(round: usize, k: usize, n: usize) -> usize {
    let k = if round % 2 == 0 { k } else { n - 1 - k };
    (round / 2 + k) % n
}

/// Prints the table of `samples` (one list per way of `names`), each way's median and mean
/// below the 90th percentile beside the first way's. `probe` names the probe, `width` the
/// column of the ways' names.
pub fn report(probe: &str, width: usize, names: &[&str], samples: Vec<Vec<Duration>>, cpu: bool) {
    println!(
        "== {probe} probe: {} GETs per way, interleaved; {}",
        samples.first().map_or(0, Vec::len),
        if cpu {
            "the client thread's CPU time"
        } else {
            "wall time"
        }
    );
    println!(
        "{:<width$} {:>9} {:>8}  {:>6} {:>6} {:>6} {:>6}  {:>9} {:>8}",
        "way", "median", "vs first", "p10", "p25", "p75", "p90", "mean<p90", "vs first"
    );
    // The samples fall in modes 10-15 us apart (how the client's and the server's threads
    // happen to meet); a median sits where two meet and jumps with their proportion, a mean
    // below the 90th percentile (the scheduler's tail cut off) moves smoothly with it.
    let mut reference = None;
    for (name, mut s) in names.iter().zip(samples) {
        s.sort();
        let q = |f: f64| s[(s.len() as f64 * f) as usize].as_secs_f64() * 1e6;
        let median = q(0.5);
        let kept = &s[..s.len() * 9 / 10];
        let mean = kept.iter().map(Duration::as_secs_f64).sum::<f64>() / kept.len() as f64 * 1e6;
        let (first_median, first_mean) = *reference.get_or_insert((median, mean));
        println!(
            "{name:<width$} {median:>6.1} us {:>+7.1} %  {:>6.1} {:>6.1} {:>6.1} {:>6.1}  {mean:>6.1} us {:>+7.1} %",
            (median / first_median - 1.0) * 100.0,
            q(0.1),
            q(0.25),
            q(0.75),
            q(0.9),
            (mean / first_mean - 1.0) * 100.0,
        );
    }
}

/// The probes' command line: `--ways a,b` (default: all), `--only WAY N`, `--quick`, and the
/// switches `--cpu`, `--allocs`, `--sizes`.
pub struct Args(Vec<String>);

impl Args {
    /// The process's arguments.
    pub fn from_env() -> Self {
        Args(std::env::args().collect())
    }

    /// The argument after `name`, if `name` is there.
    fn after(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|a| a == name).map(|i| i + 1)
    }

    /// Whether the switch `name` is there.
    pub fn has(&self, name: &str) -> bool {
        self.after(name).is_some()
    }

    /// The ways `--ways` names, else `all`.
    pub fn ways<'a>(&'a self, all: &[&'a str]) -> Vec<&'a str> {
        match self.after("--ways") {
            Some(i) => self.0[i].split(',').collect(),
            None => all.to_vec(),
        }
    }

    /// `--only WAY N`: one way, N GETs.
    pub fn only(&self) -> Option<(&str, usize)> {
        let i = self.after("--only")?;
        Some((&self.0[i], self.0[i + 1].parse().unwrap()))
    }

    /// How many blocks of how many rounds the interleaved run makes (fewer under `--quick`).
    pub fn blocks(&self) -> (usize, usize) {
        if self.has("--quick") {
            (5, 400)
        } else {
            (20, 2_000)
        }
    }
}
