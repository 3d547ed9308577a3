//! A short soak (5,000 operations at concurrency 64, every adapter at once, a faulty server,
//! one shared budget): nothing lost, no deadline overrun, every request the server read
//! counted, no descriptor left open. The long one is `--bin soak`.

use backstop_soak::soak::{self, Config};

#[test]
fn short_soak_loses_nothing_and_miscounts_nothing() {
    let report = soak::run(Config::new(5_000, 64));
    let problems = report.problems(soak::RSS_GROWTH_KIB);
    assert!(
        problems.is_empty(),
        "{problems:#?}\n{}",
        soak::render(&report)
    );
    // The mix did reach every path: faults were served and operations ended every way.
    assert!(
        report.by_fault.iter().all(|(_, n)| *n > 0),
        "{:?}",
        report.by_fault
    );
}
