//! The faults, as nftables rulesets in the server's namespace.
//!
//! The faults in force are one table, `inet bsfault_<id>`, inside the namespace: installing
//! faults replaces the table in one `nft -f -` transaction (the kernel applies a script atomically),
//! healing deletes it, and deleting the namespace deletes it too, so a table cannot outlive
//! its [`crate::FaultNet`]. The rules match the namespace's end of the veth pair only; its
//! loopback is never touched. Every rule counts what it matched
//! ([`crate::FaultNet::faulted_packets`]), so a test can wait for the fault to have bitten.

/// A fault the kernel injects between the host and the namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fault {
    /// Every packet either way is dropped: connections go half-open and stall, new ones
    /// never complete.
    DropAll,
    /// Every packet of an established TCP connection from the host is answered with a TCP
    /// reset (`reject with tcp reset`): the client's next packet (a request, an ACK of data
    /// the server sent) gets an RST, and its socket fails with `ECONNRESET`. New connections
    /// reach the established state and are reset too: heal before the next attempt.
    ResetEstablished,
    /// New connections from the host are dropped (their SYN never answered): a connect that
    /// never completes. Established connections go on.
    BlackholeNew,
    /// Every packet of the one connection from the host's `client_port`, either way, is
    /// dropped: that connection goes half-open, every other one (a retry's, a resume's) goes
    /// through. The port is the connection's [`crate::Recorded::peer`].
    DropConnection {
        /// The client's end of the connection: its source port.
        client_port: u16,
    },
    /// Every packet of the one established connection from the host's `client_port` is
    /// answered with a TCP reset ([`Fault::ResetEstablished`] for that connection alone):
    /// a retry's or a resume's new connection goes through.
    ResetConnection {
        /// The client's end of the connection: its source port.
        client_port: u16,
    },
}

impl Fault {
    /// The rules of the table's input and output chains (none: an empty string): `dev` is
    /// the namespace's end of the veth pair.
    fn chains(self, dev: &str) -> (String, String) {
        match self {
            Fault::DropAll => (
                format!("iifname \"{dev}\" counter drop"),
                format!("oifname \"{dev}\" counter drop"),
            ),
            Fault::ResetEstablished => (
                format!(
                    "iifname \"{dev}\" meta l4proto tcp ct state established counter reject with tcp reset"
                ),
                String::new(),
            ),
            Fault::BlackholeNew => (
                format!("iifname \"{dev}\" meta l4proto tcp ct state new counter drop"),
                String::new(),
            ),
            Fault::DropConnection { client_port } => (
                format!("iifname \"{dev}\" tcp sport {client_port} counter drop"),
                format!("oifname \"{dev}\" tcp dport {client_port} counter drop"),
            ),
            Fault::ResetConnection { client_port } => (
                format!(
                    "iifname \"{dev}\" tcp sport {client_port} ct state established counter reject with tcp reset"
                ),
                String::new(),
            ),
        }
    }
}

/// The `nft -f -` script that replaces `table` with the rules of `faults`, all in force at
/// once (none: deletes it). Declaring the table first makes the delete valid when none exists
/// yet.
pub(crate) fn script(table: &str, dev: &str, faults: &[Fault]) -> String {
    let mut script = format!("table inet {table}\ndelete table inet {table}\n");
    if faults.is_empty() {
        return script;
    }
    let (mut input, mut output) = (String::new(), String::new());
    for fault in faults {
        let (i, o) = fault.chains(dev);
        for (chain, rule) in [(&mut input, i), (&mut output, o)] {
            if !rule.is_empty() {
                chain.push_str(&format!("\t\t{rule}\n"));
            }
        }
    }
    script.push_str(&format!(
        "table inet {table} {{\n\
         \tchain input {{\n\t\ttype filter hook input priority filter; policy accept;\n{input}\t}}\n\
         \tchain output {{\n\t\ttype filter hook output priority filter; policy accept;\n{output}\t}}\n\
         }}\n"
    ));
    script
}

/// The packets counted by every `counter` in `listing` (`nft list table`'s output).
pub(crate) fn counted_packets(listing: &str) -> u64 {
    listing
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(3)
        .filter(|w| w[0] == "counter" && w[1] == "packets")
        .filter_map(|w| w[2].parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_of_a_listing_are_summed() {
        let listing = "table inet t {\n chain input {\n  iifname \"x\" counter packets 3 bytes 180 drop\n }\n \
                       chain output {\n  oifname \"x\" counter packets 4 bytes 9 drop\n }\n}\n";
        assert_eq!(counted_packets(listing), 7);
    }

    #[test]
    fn healing_only_deletes_the_table() {
        assert_eq!(
            script("bsfault_1", "d", &[]),
            "table inet bsfault_1\ndelete table inet bsfault_1\n"
        );
    }

    #[test]
    fn faults_installed_together_are_all_in_the_table() {
        let faults = [
            Fault::ResetConnection { client_port: 40000 },
            Fault::BlackholeNew,
        ];
        let script = script("t", "d", &faults);
        assert!(script.contains("tcp sport 40000 ct state established counter reject"));
        assert!(script.contains("ct state new counter drop"));
    }

    #[test]
    fn a_dropped_connection_is_matched_by_its_client_port_both_ways() {
        let script = script("t", "d", &[Fault::DropConnection { client_port: 5 }]);
        assert!(script.contains("iifname \"d\" tcp sport 5 counter drop"));
        assert!(script.contains("oifname \"d\" tcp dport 5 counter drop"));
    }
}
