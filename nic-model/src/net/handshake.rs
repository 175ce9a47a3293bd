//! The first bytes on every connection between two ranks: who connects, to whom, for which
//! job, with which library. The accepting rank checks all of it before the connection carries
//! a frame, and answers with a verdict; a stranger (anything that is not a rank of this job
//! with this library) is refused and changes nothing.
//!
//! ```text
//! hello   magic "nic-net\0" (8) | wire version u32 | from rank u32 | to rank u32 |
//!         job key (16) | version text length u16 | version text
//! verdict magic "nic-ack\0" (8) | 0 accepted, 1 refused (u8) | reason length u16 | reason
//! ```
//!
//! The job key is compared in constant time. Every read has a deadline, so a client that
//! connects and says nothing, or too little, costs the acceptor at most that long.

use super::card::{library_version, WIRE_VERSION};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const HELLO_MAGIC: &[u8; 8] = b"nic-net\0";
const VERDICT_MAGIC: &[u8; 8] = b"nic-ack\0";
const HELLO_FIXED: usize = 8 + 4 + 4 + 4 + 16 + 2;
/// Longest version or reason text accepted.
const MAX_TEXT: usize = 256;

/// What a connecting rank says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub wire: u32,
    pub from: u32,
    pub to: u32,
    pub job_key: [u8; 16],
    pub version: String,
}

impl Hello {
    /// This process's hello to `to`.
    pub fn ours(from: usize, to: usize, job_key: [u8; 16]) -> Hello {
        Hello {
            wire: WIRE_VERSION,
            from: from as u32,
            to: to as u32,
            job_key,
            version: library_version(),
        }
    }

    pub fn emit(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HELLO_FIXED + self.version.len());
        b.extend_from_slice(HELLO_MAGIC);
        b.extend_from_slice(&self.wire.to_le_bytes());
        b.extend_from_slice(&self.from.to_le_bytes());
        b.extend_from_slice(&self.to.to_le_bytes());
        b.extend_from_slice(&self.job_key);
        b.extend_from_slice(&(self.version.len() as u16).to_le_bytes());
        b.extend_from_slice(self.version.as_bytes());
        b
    }

    /// Reads a hello from `s` by `deadline`; the error says what was wrong with it.
    pub fn read(s: &mut TcpStream, deadline: Instant) -> Result<Hello, String> {
        let mut fixed = [0u8; HELLO_FIXED];
        read_exact_by(s, &mut fixed, deadline).map_err(|e| format!("no hello: {e}"))?;
        if &fixed[..8] != HELLO_MAGIC {
            return Err("it does not speak this protocol (wrong magic)".into());
        }
        let u32_at = |at: usize| u32::from_le_bytes(fixed[at..at + 4].try_into().expect("4"));
        let text_len = u16::from_le_bytes([fixed[36], fixed[37]]) as usize;
        if text_len > MAX_TEXT {
            return Err(format!("a version text of {text_len} bytes"));
        }
        let mut text = vec![0u8; text_len];
        read_exact_by(s, &mut text, deadline).map_err(|e| format!("truncated hello: {e}"))?;
        Ok(Hello {
            wire: u32_at(8),
            from: u32_at(12),
            to: u32_at(16),
            job_key: fixed[20..36].try_into().expect("16"),
            version: String::from_utf8_lossy(&text).into_owned(),
        })
    }
}

/// Compares two keys in time that does not depend on where they differ.
pub fn same_key(a: &[u8; 16], b: &[u8; 16]) -> bool {
    let diff = a
        .iter()
        .zip(b)
        .fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
    diff == 0
}

/// Sends the verdict on a hello: `None` accepts, `Some(reason)` refuses.
pub fn send_verdict(s: &mut TcpStream, refusal: Option<&str>) -> io::Result<()> {
    let reason = refusal.unwrap_or("").as_bytes();
    let reason = &reason[..reason.len().min(MAX_TEXT)];
    let mut b = Vec::with_capacity(11 + reason.len());
    b.extend_from_slice(VERDICT_MAGIC);
    b.push(refusal.is_some() as u8);
    b.extend_from_slice(&(reason.len() as u16).to_le_bytes());
    b.extend_from_slice(reason);
    s.write_all(&b)
}

/// Reads the verdict on our hello: `Ok(())` if accepted, else the peer's reason.
pub fn read_verdict(s: &mut TcpStream, deadline: Instant) -> Result<(), String> {
    let mut fixed = [0u8; 11];
    read_exact_by(s, &mut fixed, deadline).map_err(|e| format!("no answer to our hello: {e}"))?;
    if &fixed[..8] != VERDICT_MAGIC {
        return Err("it answered in another protocol".into());
    }
    let len = (u16::from_le_bytes([fixed[9], fixed[10]]) as usize).min(MAX_TEXT);
    let mut reason = vec![0u8; len];
    read_exact_by(s, &mut reason, deadline).map_err(|e| format!("truncated answer: {e}"))?;
    match fixed[8] {
        0 => Ok(()),
        _ => Err(format!(
            "it refused us: {}",
            String::from_utf8_lossy(&reason)
        )),
    }
}

/// `read_exact` that gives up at `deadline` (the socket is blocking, with a read timeout).
fn read_exact_by(s: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
        }
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed early")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare() {
        assert!(same_key(&[1; 16], &[1; 16]));
        let mut k = [1u8; 16];
        k[15] = 2;
        assert!(!same_key(&[1; 16], &k));
    }

    #[test]
    fn hello_and_verdict_over_a_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(&Hello::ours(3, 1, [7; 16]).emit()).unwrap();
            read_verdict(&mut c, Instant::now() + Duration::from_secs(5))
        });
        let (mut s, _) = l.accept().unwrap();
        let h = Hello::read(&mut s, Instant::now() + Duration::from_secs(5)).unwrap();
        assert_eq!(h, Hello::ours(3, 1, [7; 16]));
        send_verdict(&mut s, Some("no thanks")).unwrap();
        assert_eq!(t.join().unwrap(), Err("it refused us: no thanks".into()));
    }

    #[test]
    fn silence_and_garbage_end_by_the_deadline() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let t0 = Instant::now();
        let e = Hello::read(&mut s, Instant::now() + Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("timed out"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(2));
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789012345678901234567890")
            .unwrap();
        let e = Hello::read(&mut s, Instant::now() + Duration::from_secs(2)).unwrap_err();
        assert!(e.contains("magic"), "{e}");
    }
}
