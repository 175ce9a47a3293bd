//! Business cards: what each rank publishes in the launcher's key-value space so that the
//! others can find it. One line of ASCII without spaces, as PMI values must be:
//!
//! ```text
//! v=<wire version>/<library version>;h=<host id>;p=<pid>;a=<addr>,<addr>;t=<port>;s=<slot bytes>[;k=<job key>]
//! ```
//!
//! `h` decides who shares a fabric (ranks with equal host ids); `a` and `t` where the rank
//! listens; `s` the packet-buffer size, which every rank of a job must agree on (it fixes the
//! mtu); `k`, on rank 0's card only, the key that every connection of the job presents.

use std::net::Ipv4Addr;

/// Version of the frames and handshake on the wire; ranks of different versions refuse each
/// other.
pub const WIRE_VERSION: u32 = 1;

/// What this library calls itself on the wire: wire version and package version.
pub fn library_version() -> String {
    format!("{WIRE_VERSION}/{}", env!("CARGO_PKG_VERSION"))
}

/// One rank's card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    pub version: String,
    pub host: String,
    pub pid: u32,
    pub addrs: Vec<Ipv4Addr>,
    pub port: u16,
    pub slot_bytes: usize,
    pub job_key: Option<[u8; 16]>,
}

impl Card {
    /// The card as one value.
    pub fn emit(&self) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(|a| a.to_string()).collect();
        let mut s = format!(
            "v={};h={};p={};a={};t={};s={}",
            self.version,
            self.host,
            self.pid,
            addrs.join(","),
            self.port,
            self.slot_bytes
        );
        if let Some(k) = &self.job_key {
            s.push_str(";k=");
            s.push_str(&crate::fabric::hex(k));
        }
        s
    }

    /// Reads a card; the error says which field is wrong.
    pub fn parse(s: &str) -> Result<Card, String> {
        let mut card = Card {
            version: String::new(),
            host: String::new(),
            pid: 0,
            addrs: Vec::new(),
            port: 0,
            slot_bytes: 0,
            job_key: None,
        };
        let mut seen = [false; 6];
        for field in s.trim().split(';') {
            let (k, v) = field
                .split_once('=')
                .ok_or_else(|| format!("field {field:?} has no '='"))?;
            let bad = |what: &str| format!("field {k}={v:?} is not {what}");
            match k {
                "v" => (card.version, seen[0]) = (v.to_string(), true),
                "h" if !v.is_empty() => (card.host, seen[1]) = (v.to_string(), true),
                "p" => (card.pid, seen[2]) = (v.parse().map_err(|_| bad("a pid"))?, true),
                "a" => {
                    card.addrs = v
                        .split(',')
                        .map(|a| a.parse().map_err(|_| bad("a list of IPv4 addresses")))
                        .collect::<Result<_, _>>()?;
                    seen[3] = true;
                }
                "t" => (card.port, seen[4]) = (v.parse().map_err(|_| bad("a port"))?, true),
                "s" => (card.slot_bytes, seen[5]) = (v.parse().map_err(|_| bad("a size"))?, true),
                "k" => {
                    card.job_key =
                        Some(crate::fabric::parse_key(v).ok_or_else(|| bad("a 128-bit key"))?)
                }
                _ => {}
            }
        }
        if let Some(i) = seen.iter().position(|s| !s) {
            return Err(format!(
                "field {} is missing",
                ["v", "h", "p", "a", "t", "s"][i]
            ));
        }
        Ok(card)
    }

    /// "host h (a.b.c.d)" for messages.
    pub fn where_(&self) -> String {
        match self.addrs.first() {
            Some(a) => format!("host {} ({a}:{})", self.host, self.port),
            None => format!("host {}", self.host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let c = Card {
            version: library_version(),
            host: "node1:4026531840".into(),
            pid: 1234,
            addrs: vec![Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::LOCALHOST],
            port: 40000,
            slot_bytes: 8320,
            job_key: Some([0xab; 16]),
        };
        assert_eq!(Card::parse(&c.emit()), Ok(c.clone()));
        let no_key = Card { job_key: None, ..c };
        assert_eq!(Card::parse(&no_key.emit()), Ok(no_key));
    }

    #[test]
    fn bad_cards_say_why() {
        assert!(Card::parse("").unwrap_err().contains("no '='"));
        assert!(Card::parse("v=1;h=x;p=1;a=1.2.3.4;t=5")
            .unwrap_err()
            .contains("s is missing"));
        assert!(Card::parse("v=1;h=x;p=1;a=1.2.3;t=5;s=1")
            .unwrap_err()
            .contains("IPv4"));
        assert!(Card::parse("v=1;h=x;p=1;a=1.2.3.4;t=5;s=1;k=zz")
            .unwrap_err()
            .contains("key"));
    }
}
