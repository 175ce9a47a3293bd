//! Who this host is, and where it can be reached: the facts a rank puts on its card.
//!
//! Two ranks share a fabric when their host ids are equal. The id is the host name and the
//! inode of the network namespace, since ranks in different namespaces of one machine (the
//! tests' "hosts") cannot reach each other's abstract sockets and must not share a fabric.
//! `MPI_HOST_ID` overrides it (several "hosts" on loopback addresses 127.0.0.x).

use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;

/// Environment variable that overrides this host's identity.
pub const HOST_ID_ENV: &str = "MPI_HOST_ID";
/// Environment variable with the IPv4 address(es), comma-separated, that this rank listens on
/// and publishes (default: every address of every interface that is up, loopback last).
pub const ADDR_ENV: &str = "MPI_NET_ADDR";

/// This host's identity: `MPI_HOST_ID`, else `hostname:netns-inode`.
pub fn host_id() -> String {
    if let Some(id) = std::env::var(HOST_ID_ENV).ok().filter(|s| !s.is_empty()) {
        return sanitize(&id);
    }
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let netns = std::fs::metadata("/proc/self/ns/net")
        .map(|m| m.ino())
        .unwrap_or(0);
    sanitize(&format!("{name}:{netns}"))
}

/// Keeps a host id inside a card's alphabet.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != ';' && c != '=' && c != ',' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The addresses to publish: `MPI_NET_ADDR`, else this host's IPv4 addresses (loopback last,
/// so that a peer on another host tries a reachable one first).
pub fn addresses() -> Result<Vec<Ipv4Addr>, String> {
    if let Ok(v) = std::env::var(ADDR_ENV) {
        return v
            .split(',')
            .map(|a| {
                a.trim().parse().map_err(|_| {
                    format!("{ADDR_ENV}={v:?}: {a:?} is not an IPv4 address of this host")
                })
            })
            .collect();
    }
    let mut addrs = interface_addresses();
    addrs.sort_by_key(|a| a.is_loopback());
    addrs.dedup();
    if addrs.is_empty() {
        addrs.push(Ipv4Addr::LOCALHOST);
    }
    Ok(addrs)
}

/// The IPv4 addresses of the interfaces that are up.
fn interface_addresses() -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list that we free below; we only read it.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut p = list;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs gave us, not yet freed.
        let ifa = unsafe { &*p };
        let up = ifa.ifa_flags & libc::IFF_UP as u32 != 0;
        if up && !ifa.ifa_addr.is_null() {
            // SAFETY: a non-null ifa_addr points to a sockaddr whose family says its type.
            let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
            if family == libc::AF_INET {
                // SAFETY: AF_INET means the sockaddr is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                out.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        p = ifa.ifa_next;
    }
    // SAFETY: the list came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_host_has_an_id_and_an_address() {
        let id = host_id();
        assert!(!id.is_empty() && !id.contains(';'), "{id}");
        assert!(!addresses().unwrap().is_empty());
        assert_eq!(sanitize("a b;c=d,e"), "a_b_c_d_e");
    }
}
