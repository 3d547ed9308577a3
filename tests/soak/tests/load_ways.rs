//! Every way of the load test runs to its end against a healthy loopback server: each of its
//! GETs is one request the server read (none failed, none was retried), and every connection
//! ends after it. The load itself (throughput) is `--bin load`; this keeps its ways working.

use std::time::Duration;

use backstop_soak::faulty_server::{FaultyServer, Mix};
use backstop_soak::load::{self, Way};

#[test]
fn every_load_way_sends_each_get_once() {
    let server = FaultyServer::start(Mix::healthy());
    let uri: http::Uri = server.url("/load").parse().expect("a URI");
    for way in Way::ALL {
        let before = server.requests();
        // Panics if a GET fails.
        let _ = load::run(way, &uri, 40, 4);
        assert_eq!(server.requests() - before, 40, "{}", way.name());
    }
    assert!(
        server.wait_idle(Duration::from_secs(10)),
        "a connection stayed open"
    );
}
