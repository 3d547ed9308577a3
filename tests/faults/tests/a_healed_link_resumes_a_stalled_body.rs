//! The kernel drops every packet mid-body for a second, then the link is healed: the bare
//! reader stalls (not a byte arrives during the fault), and once healed TCP's retransmissions
//! resume the same connection, and the whole body arrives intact. The stall and the resume a
//! body scenario lives through.

use std::time::Duration;

use backstop_faults::{body, FaultNet, Progress, Reply, Server};

const TOTAL: usize = 8 << 20;
const BEFORE_THE_FAULT: usize = 1 << 20;
const FAULT: Duration = Duration::from_secs(1);

#[test]
fn a_body_stalled_by_a_dropped_link_resumes_on_the_same_connection_once_healed() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let reply = Reply::status(200)
        .body(body::pattern(TOTAL))
        .pause_body_at(BEFORE_THE_FAULT);
    let server = net
        .serve(|| Server::start_on(net.server_ip().into(), [reply]))
        .expect("entered the namespace")
        .expect("bound in the namespace");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(2)))
        .timeout_recv_body(Some(Duration::from_secs(15)))
        .build()
        .into();
    let progress = Progress::new();

    let (read, during_the_fault) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut response = agent.get(server.url("/big")).call().expect("a response");
            progress.read_to_end(response.body_mut().as_reader())
        });
        assert!(progress.wait_for(BEFORE_THE_FAULT as u64, Duration::from_secs(5)));
        net.drop_all().expect("installed");
        server.release();
        std::thread::sleep(FAULT);
        let during_the_fault = progress.bytes();
        net.heal().expect("healed");
        (reader.join().expect("the reader ran"), during_the_fault)
    });

    assert_eq!(
        during_the_fault, BEFORE_THE_FAULT as u64,
        "bytes crossed a dropped link"
    );
    read.end.expect("the body arrived to its end");
    assert!(
        read.bytes == body::pattern(TOTAL),
        "the body arrived intact"
    );
    assert_eq!((server.connections(), server.requests()), (1, 1));
}
