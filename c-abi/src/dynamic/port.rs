//! Ports: what `MPI_Open_port` makes and `MPI_Comm_connect` names.
//!
//! A port is a TCP listener of the process that opened it and a 128-bit secret drawn from
//! `/dev/urandom`; its name carries both: `mpiport1:ADDRESS:PORT:SECRET` (32 hex digits). A
//! connecting root must present the secret before anything else happens; a stranger that
//! does not is refused and changes nothing. The address is `MPI_NET_ADDR`'s first entry if it
//! is set (jobs on other hosts), else the loopback address (jobs on this host).

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};

/// The prefix of every port name this library makes.
const PREFIX: &str = "mpiport1";

/// Bytes of a port's secret (and of a connection's token).
pub(crate) const SECRET_BYTES: usize = 16;

/// An open port.
pub(crate) struct OpenPort {
    pub name: String,
    pub listener: TcpListener,
    pub secret: [u8; SECRET_BYTES],
}

impl OpenPort {
    /// A copy for one `MPI_Comm_accept` (the listener's descriptor duplicated): the call owns
    /// it, so its waits keep nothing of the process's state.
    pub(crate) fn try_clone(&self) -> MpiResult<OpenPort> {
        let listener = self.listener.try_clone().map_err(|e| {
            MpiError::new(
                MPI_ERR_PORT,
                format!("port {}: its listener cannot be used: {e}", self.name),
            )
        })?;
        Ok(OpenPort {
            name: self.name.clone(),
            listener,
            secret: self.secret,
        })
    }
}

/// A parsed port name.
pub(crate) struct PortName {
    pub addr: SocketAddr,
    pub secret: [u8; SECRET_BYTES],
}

/// Random bytes from the kernel.
pub(crate) fn random_bytes() -> MpiResult<[u8; SECRET_BYTES]> {
    let mut bytes = [0u8; SECRET_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("cannot read /dev/urandom: {e}")))?;
    Ok(bytes)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn unhex(s: &str) -> Option<[u8; SECRET_BYTES]> {
    if s.len() != 2 * SECRET_BYTES {
        return None;
    }
    let mut out = [0u8; SECRET_BYTES];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Compares two secrets in constant time.
pub(crate) fn same_secret(a: &[u8; SECRET_BYTES], b: &[u8; SECRET_BYTES]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The address this process listens on for other jobs.
pub(crate) fn listen_address() -> IpAddr {
    std::env::var(nic_model::net::ADDR_ENV)
        .ok()
        .and_then(|v| v.split(',').next().and_then(|a| a.trim().parse().ok()))
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// A listener on [`listen_address`], on a port the kernel picks.
pub(crate) fn listener() -> MpiResult<(TcpListener, SocketAddr)> {
    let addr = SocketAddr::new(listen_address(), 0);
    let l = TcpListener::bind(addr).map_err(|e| {
        MpiError::new(
            MPI_ERR_OTHER,
            format!("cannot listen on {addr} for processes of other jobs: {e} (set MPI_NET_ADDR to an address of this host)"),
        )
    })?;
    let bound = l
        .local_addr()
        .map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("a listener's address: {e}")))?;
    Ok((l, bound))
}

/// Opens a new port.
pub(crate) fn open() -> MpiResult<OpenPort> {
    let (listener, bound) = listener()?;
    let secret = random_bytes()?;
    let name = format!("{PREFIX}:{}:{}:{}", bound.ip(), bound.port(), hex(&secret));
    Ok(OpenPort {
        name,
        listener,
        secret,
    })
}

/// Parses a port name; `MPI_ERR_PORT` if it is not one.
pub(crate) fn parse(name: &str) -> MpiResult<PortName> {
    let bad = || {
        MpiError::new(
            MPI_ERR_PORT,
            format!("'{name}' is not a port name (MPI_Open_port gives them, as mpiport1:ADDRESS:PORT:SECRET)"),
        )
    };
    let mut parts = name.trim().rsplitn(3, ':');
    let secret = parts.next().and_then(unhex).ok_or_else(bad)?;
    let port: u16 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let rest = parts.next().ok_or_else(bad)?;
    let ip: IpAddr = rest
        .strip_prefix(PREFIX)
        .and_then(|r| r.strip_prefix(':'))
        .and_then(|a| a.parse().ok())
        .ok_or_else(bad)?;
    Ok(PortName {
        addr: SocketAddr::new(ip, port),
        secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_round_trip_and_bad_ones_are_refused() {
        let p = open().unwrap();
        let parsed = parse(&p.name).unwrap();
        assert_eq!(parsed.addr, p.listener.local_addr().unwrap());
        assert!(same_secret(&parsed.secret, &p.secret));
        for bad in [
            "",
            "x",
            "mpiport1:1.2.3.4:5",
            "mpiport1:1.2.3.4:99999:00",
            "tcp:1.2.3.4:5:00112233445566778899aabbccddeeff",
        ] {
            assert_eq!(parse(bad).err().unwrap().class, MPI_ERR_PORT, "{bad}");
        }
    }
}
