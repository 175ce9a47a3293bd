//! The counters of one MPI process: the engine's own copies plus everything its channel and
//! the layers under it counted ([`ChannelCounters`]), and their JSON form, which c-abi's
//! `MPI_Finalize` writes when `MPI_COUNTERS` is set and the `layers` benchmark reads.
//!
//! The JSON, one object per rank (all counts since `MPI_Init`):
//!
//! ```text
//! {"channel_name": "bip", "rank": 0,
//!  "nic": {"packets_tx", "bytes_tx", "packets_rx", "bytes_rx", "stalls", "dma_ops", "dma_bytes", "assists", "faults"},
//!  "bip": {"messages_sent", "messages_received", "copies", "bytes_copied", "rendezvous_single_copy",
//!          "rendezvous_packets", "credit_waits", "retransmits", "rejected"},
//!  "fm": {"messages_sent", ..., "bytes_copied", "copies", "send_bytes_copied"} or null,
//!  "channel": {"copies", "bytes_copied"},
//!  "adi": {"copies", "bytes_copied"}}
//! ```

use crate::channel::{ChannelCounters, CopyCount};
use std::fmt::Write;

/// A snapshot of one process's counters (see [`crate::Adi::counters`]).
#[derive(Clone, Copy, Debug)]
pub struct AdiCounters {
    /// `"bip"`, `"fm"` or `"fm1"`.
    pub channel_name: &'static str,
    pub rank: usize,
    /// The channel's counters and those of the layers under it.
    pub channel: ChannelCounters,
    /// The engine's own copies (unexpected eager messages into the receive that matched).
    pub adi: CopyCount,
}

/// Writes `{"name": value, ...}` for a list of counters.
fn object(out: &mut String, fields: &[(&str, u64)]) {
    out.push('{');
    for (i, (name, value)) in fields.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let _ = write!(out, "{sep}\"{name}\": {value}");
    }
    out.push('}');
}

impl AdiCounters {
    /// The JSON object described in the module documentation.
    pub fn to_json(&self) -> String {
        let (n, b) = (&self.channel.nic, &self.channel.bip);
        let mut out = format!(
            "{{\"channel_name\": \"{}\", \"rank\": {}, \"nic\": ",
            self.channel_name, self.rank
        );
        object(
            &mut out,
            &[
                ("packets_tx", n.packets_tx),
                ("bytes_tx", n.bytes_tx),
                ("packets_rx", n.packets_rx),
                ("bytes_rx", n.bytes_rx),
                ("stalls", n.stalls),
                ("dma_ops", n.dma_ops),
                ("dma_bytes", n.dma_bytes),
                ("assists", n.assists),
                ("copies_outside", n.copies_outside),
                ("faults", n.faults),
            ],
        );
        out.push_str(", \"bip\": ");
        object(
            &mut out,
            &[
                ("messages_sent", b.messages_sent),
                ("messages_received", b.messages_received),
                ("copies", b.copies),
                ("bytes_copied", b.bytes_copied),
                ("rendezvous_single_copy", b.rendezvous_single_copy),
                ("rendezvous_packets", b.rendezvous_packets),
                ("credit_waits", b.credit_waits),
                ("retransmits", b.retransmits),
                ("rejected", b.rejected),
            ],
        );
        out.push_str(", \"fm\": ");
        match &self.channel.fm {
            Some(f) => object(
                &mut out,
                &[
                    ("messages_sent", f.messages_sent),
                    ("messages_received", f.messages_received),
                    ("packets_sent", f.packets_sent),
                    ("packets_received", f.packets_received),
                    ("bulk_direct", f.bulk_direct),
                    ("bulk_staged", f.bulk_staged),
                    ("suspensions", f.suspensions),
                    ("bytes_copied", f.bytes_copied),
                    ("copies", f.copies),
                    ("send_bytes_copied", f.send_bytes_copied),
                ],
            ),
            None => out.push_str("null"),
        }
        for (name, c) in [("channel", self.channel.channel), ("adi", self.adi)] {
            let _ = write!(out, ", \"{name}\": ");
            object(&mut out, &[("copies", c.copies), ("bytes_copied", c.bytes)]);
        }
        out.push('}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_every_layer() {
        let mut c = AdiCounters {
            channel_name: "fm1",
            rank: 1,
            channel: ChannelCounters::default(),
            adi: CopyCount::default(),
        };
        c.channel.nic.packets_tx = 5;
        c.channel.fm = Some(Default::default());
        c.adi.add(100);
        let j = c.to_json();
        assert!(
            j.starts_with("{\"channel_name\": \"fm1\", \"rank\": 1, \"nic\": {\"packets_tx\": 5,"),
            "{j}"
        );
        assert!(j.contains("\"fm\": {\"messages_sent\": 0"), "{j}");
        assert!(
            j.ends_with("\"adi\": {\"copies\": 1, \"bytes_copied\": 100}}"),
            "{j}"
        );
    }
}
