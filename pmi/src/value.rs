//! What keys and values look like on the wire.
//!
//! **Keys.** PMI's key space is one per job, not one per rank, so the client files a key that
//! rank `r` puts as `r<r>.<key>` ([`qualified_key`]); a key is 1 or more of `A-Z a-z 0-9 _ - .`
//! (anything else is refused). The rank's digits end at the first `.`, so no two (rank, key)
//! pairs share a qualified key.
//!
//! **Values** are percent-encoded ([`encode`]): every byte outside the printable ASCII range
//! `!`..`~`, and `%`, `;` and `\`, becomes `%XX`. So any non-empty string crosses both wire
//! formats unchanged: PMI-1 splits fields at spaces, PMI-2 at `;`, and MPICH's newer PMI-1
//! parser treats `\` as an escape. `=` needs no encoding (fields split at their first `=`),
//! so a business card `key=value;key=value` grows by two bytes per `;` only. An empty value is
//! refused: PMI-1 servers reject `value=` with nothing after it.

/// Bytes that go on the wire as they are.
fn is_plain(byte: u8) -> bool {
    (b'!'..=b'~').contains(&byte) && !matches!(byte, b'%' | b';' | b'\\')
}

/// Checks a key given to `put`/`get`; returns why it is refused.
pub fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("a key is not empty".into());
    }
    match key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        Some(c) => Err(format!(
            "{c:?} is not allowed; keys are made of A-Z a-z 0-9 _ - ."
        )),
        None => Ok(()),
    }
}

/// The key under which `rank`'s `key` is stored in the job's key space.
pub fn qualified_key(rank: usize, key: &str) -> String {
    format!("r{rank}.{key}")
}

/// The longest key a job of `size` ranks can use, given the server's longest stored key
/// (`keylen_max`, which counts a terminating NUL as MPICH's does).
pub fn usable_key_len(server_key_max: usize, size: usize) -> usize {
    let prefix = qualified_key(size.saturating_sub(1), "").len();
    server_key_max.saturating_sub(1 + prefix)
}

/// Percent-encodes `value` for the wire (see the module doc).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for &byte in value.as_bytes() {
        if is_plain(byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Undoes [`encode`]; returns why a wire value is not one it produced.
pub fn decode(wire: &str) -> Result<String, String> {
    let bytes = wire.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad %-escape at byte {i}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the decoded value is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_keeps_business_cards_readable() {
        for value in [
            "a=1;b=2",
            "with space",
            "nl\nand%pct",
            "back\\slash",
            "ünï",
            "=",
        ] {
            let wire = encode(value);
            assert!(wire.bytes().all(is_plain_or_pct), "{wire}");
            assert!(!wire.contains(';') && !wire.contains(' '), "{wire}");
            assert_eq!(decode(&wire).unwrap(), value);
        }
        assert_eq!(encode("host=n1;port=7"), "host=n1%3Bport=7");
        assert!(decode("%4").is_err());
        assert!(decode("%zz").is_err());
    }

    fn is_plain_or_pct(b: u8) -> bool {
        is_plain(b) || b == b'%'
    }

    #[test]
    fn keys_and_their_room() {
        assert!(check_key("card").is_ok());
        assert!(check_key("a.b-c_1").is_ok());
        assert!(check_key("").is_err());
        assert!(check_key("a b").is_err());
        assert!(check_key("a=b").is_err());
        assert_eq!(qualified_key(12, "x"), "r12.x");
        // 64 with the NUL, "r99." for 100 ranks.
        assert_eq!(usable_key_len(64, 100), 64 - 1 - 4);
    }
}
