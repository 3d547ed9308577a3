//! The kernel drops every packet mid-body: the connection goes half-open, and a bare ureq
//! client reading the body sees no error, no bytes, only silence, until its own body timeout
//! ends the read. What the fault suite's body scenarios start from (backstop's operation ends
//! at the head today: the caller reads the body as here).
//!
//! The server stands after 1 MiB of the 8 MiB body ([`Reply::pause_body_at`]) until the
//! client has read that MiB; the fault is installed, the server goes on writing into the void.

use std::time::{Duration, Instant};

use backstop_faults::{body, FaultNet, Progress, Reply, Server};

const TOTAL: usize = 8 << 20;
const BEFORE_THE_FAULT: usize = 1 << 20;
const BODY_TIMEOUT: Duration = Duration::from_secs(2);

#[test]
fn a_half_open_connection_mid_body_stalls_the_reader_until_its_body_timeout() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let reply = Reply::status(200)
        .body(body::pattern(TOTAL))
        .resumable()
        .pause_body_at(BEFORE_THE_FAULT);
    let server = net
        .serve(|| Server::start_on(net.server_ip().into(), [reply]))
        .expect("entered the namespace")
        .expect("bound in the namespace");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(2)))
        .timeout_recv_response(Some(Duration::from_secs(2)))
        .timeout_recv_body(Some(BODY_TIMEOUT))
        .build()
        .into();
    let progress = Progress::new();

    let (read, faulted_at) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut response = agent.get(server.url("/big")).call().expect("a response");
            progress.read_to_end(response.body_mut().as_reader())
        });
        assert!(progress.wait_for(BEFORE_THE_FAULT as u64, Duration::from_secs(5)));
        net.drop_all().expect("installed");
        let faulted_at = Instant::now();
        server.release();
        (reader.join().expect("the reader ran"), faulted_at)
    });

    // Not a byte after the fault, the bytes before it intact, and the end is the client's own
    // timeout, not an error from the network.
    assert_eq!(read.bytes.len(), BEFORE_THE_FAULT);
    assert_eq!(read.bytes, body::pattern(TOTAL)[..BEFORE_THE_FAULT]);
    let error = read.end.expect_err("the read cannot end well");
    let inner = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<ureq::Error>());
    assert!(
        matches!(inner, Some(ureq::Error::Timeout(ureq::Timeout::RecvBody))),
        "{error:?}"
    );
    let silent = read.ended - faulted_at;
    assert!(
        silent >= BODY_TIMEOUT / 2 && silent < BODY_TIMEOUT + Duration::from_secs(2),
        "silent for {silent:?}"
    );
    // The server's writes went nowhere, and nobody reset the connection.
    assert!(net.faulted_packets().expect("counted") >= 1);
    assert_eq!(server.connections(), 1);
}
