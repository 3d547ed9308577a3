//! The faults, as nftables rulesets in the server's namespace.
//!
//! Each fault is one table, `inet bsfault_<id>`, inside the namespace: installing a fault
//! replaces the table in one `nft -f -` transaction (the kernel applies a script atomically),
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
}

impl Fault {
    /// The rules of the table's input and output chains: `dev` is the namespace's end of the
    /// veth pair.
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
        }
    }
}

/// The `nft -f -` script that replaces `table` with `fault`'s rules (or, for `None`, deletes
/// it). Declaring the table first makes the delete valid when none exists yet.
pub(crate) fn script(table: &str, dev: &str, fault: Option<Fault>) -> String {
    let mut script = format!("table inet {table}\ndelete table inet {table}\n");
    if let Some(fault) = fault {
        let (input, output) = fault.chains(dev);
        script.push_str(&format!(
            "table inet {table} {{\n\
             \tchain input {{\n\t\ttype filter hook input priority filter; policy accept;\n\t\t{input}\n\t}}\n\
             \tchain output {{\n\t\ttype filter hook output priority filter; policy accept;\n\t\t{output}\n\t}}\n\
             }}\n"
        ));
    }
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
            script("bsfault_1", "d", None),
            "table inet bsfault_1\ndelete table inet bsfault_1\n"
        );
    }
}
