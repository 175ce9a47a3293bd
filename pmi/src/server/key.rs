//! The job's secret: 16 random bytes, shown as 32 hex digits, that a TCP client must present
//! (`MPI_PMI_KEY` in its environment, `jobkey=` in its `initack`).

use std::fmt;
use std::io::{self, Read};

const KEY_BYTES: usize = 16;

#[derive(Clone, PartialEq, Eq)]
pub struct JobKey([u8; KEY_BYTES]);

impl JobKey {
    /// A fresh key from the kernel's random source.
    pub fn random() -> io::Result<JobKey> {
        let mut bytes = [0u8; KEY_BYTES];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(JobKey(bytes))
    }

    /// A key from its hex form.
    pub fn from_hex(hex: &str) -> Option<JobKey> {
        decode_hex(hex).map(JobKey)
    }

    /// The 32 lower-case hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// True if `candidate` is this key in hex. The comparison of the key bytes takes the same
    /// time wherever they differ (only the length, which is no secret, returns early).
    pub fn matches_hex(&self, candidate: &str) -> bool {
        let Some(bytes) = decode_hex(candidate) else {
            return false;
        };
        let difference = self
            .0
            .iter()
            .zip(bytes.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        // Keep the compiler from turning the fold into an early exit.
        std::hint::black_box(difference) == 0
    }
}

impl fmt::Debug for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never in logs.
        f.write_str("JobKey(..)")
    }
}

fn decode_hex(hex: &str) -> Option<[u8; KEY_BYTES]> {
    let hex = hex.as_bytes();
    if hex.len() != 2 * KEY_BYTES || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut out = [0u8; KEY_BYTES];
    for (i, pair) in hex.chunks(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_their_hex_only() {
        let key = JobKey::random().unwrap();
        let other = JobKey::random().unwrap();
        assert_ne!(key, other);
        assert!(key.matches_hex(&key.to_hex()));
        assert!(key.matches_hex(&key.to_hex().to_uppercase()));
        assert!(!key.matches_hex(&other.to_hex()));
        assert!(!key.matches_hex(&key.to_hex()[..30]));
        assert!(!key.matches_hex("zz"));
        assert!(!key.matches_hex(""));
        assert_eq!(JobKey::from_hex(&key.to_hex()), Some(key.clone()));
        assert_eq!(format!("{key:?}"), "JobKey(..)");
    }
}
