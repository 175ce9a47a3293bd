//! The two wire formats, shared by the client and the server.
//!
//! **PMI-1** (MPICH's "simple PMI", spoken by Hydra and by our `mpirun`): one message per
//! line, `cmd=NAME key=value key=value\n`, fields separated by spaces, each split at its first
//! `=`. A word without `=` continues the value before it (servers put free text such as an
//! abort message last, spaces and all), so such text survives a round trip.
//!
//! **PMI-2** (Slurm's `--mpi=pmi2` plugin, Hydra when a client asks for it): a frame of six
//! characters holding the decimal length of the body (MPICH pads on the left, Slurm on the
//! right; both parse), then the body `cmd=NAME;key=value;key=value;`. Neither Slurm nor MPICH
//! escapes `;` in values, so values must not contain it (see [`crate::value`]).

/// Width of the PMI-2 length prefix.
pub const FRAME_LENGTH_DIGITS: usize = 6;
/// The largest PMI-2 body a frame can announce.
pub const MAX_FRAME_BODY: usize = 999_999;

/// One message of either format: the command and its fields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub cmd: String,
    pub fields: Vec<(String, String)>,
}

impl Message {
    pub fn new(cmd: &str) -> Message {
        Message {
            cmd: cmd.to_string(),
            fields: Vec::new(),
        }
    }

    /// Adds a field (builder style).
    pub fn with(mut self, key: &str, value: impl ToString) -> Message {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of the first field named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The PMI-1 line, newline included.
    pub fn to_v1_line(&self) -> String {
        let mut line = format!("cmd={}", self.cmd);
        for (key, value) in &self.fields {
            line.push(' ');
            line.push_str(key);
            line.push('=');
            line.push_str(value);
        }
        line.push('\n');
        line
    }

    /// The PMI-2 frame: length prefix and body. `None` if the body is too long to frame.
    pub fn to_v2_frame(&self) -> Option<Vec<u8>> {
        let mut body = format!("cmd={};", self.cmd);
        for (key, value) in &self.fields {
            body.push_str(key);
            body.push('=');
            body.push_str(value);
            body.push(';');
        }
        if body.len() > MAX_FRAME_BODY {
            return None;
        }
        let mut frame = format!("{:>width$}", body.len(), width = FRAME_LENGTH_DIGITS).into_bytes();
        frame.extend_from_slice(body.as_bytes());
        Some(frame)
    }

    /// Parses one PMI-1 line (with or without its newline).
    pub fn parse_v1(line: &str) -> Result<Message, String> {
        let line = line.trim_end_matches(['\n', '\r']);
        let mut words = line.split([' ', '\t']).filter(|w| !w.is_empty());
        let first = words.next().ok_or("empty line")?;
        let cmd = match first.split_once('=') {
            Some(("cmd", cmd)) if !cmd.is_empty() => cmd,
            Some(("mcmd", _)) => return Err("multi-line commands (mcmd=) are not supported".into()),
            _ => return Err("a message starts with cmd=NAME".into()),
        };
        let mut message = Message::new(cmd);
        for word in words {
            match word.split_once('=') {
                Some((key, value)) if !key.is_empty() => {
                    message.fields.push((key.to_string(), value.to_string()));
                }
                _ => match message.fields.last_mut() {
                    Some((_, value)) => {
                        value.push(' ');
                        value.push_str(word);
                    }
                    None => return Err(format!("'{word}' is not key=value")),
                },
            }
        }
        Ok(message)
    }

    /// Parses one PMI-2 body (the frame without its length prefix).
    pub fn parse_v2(body: &str) -> Result<Message, String> {
        let mut parts = body.split(';').filter(|p| !p.is_empty());
        let first = parts.next().ok_or("empty frame")?;
        let cmd = match first.split_once('=') {
            Some(("cmd", cmd)) if !cmd.is_empty() => cmd,
            _ => return Err("a frame starts with cmd=NAME;".into()),
        };
        let mut message = Message::new(cmd);
        for part in parts {
            match part.split_once('=') {
                Some((key, value)) if !key.is_empty() => {
                    message.fields.push((key.to_string(), value.to_string()));
                }
                _ => return Err(format!("'{part}' is not key=value")),
            }
        }
        Ok(message)
    }
}

/// Reads a PMI-2 length prefix.
pub fn parse_frame_length(prefix: &[u8]) -> Result<usize, String> {
    std::str::from_utf8(prefix)
        .ok()
        .map(str::trim)
        .and_then(|digits| digits.parse::<usize>().ok())
        .ok_or_else(|| {
            format!(
                "a PMI-2 frame starts with its length in {FRAME_LENGTH_DIGITS} characters, not {:?}",
                String::from_utf8_lossy(prefix)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_round_trip_and_free_text() {
        let m = Message::new("put")
            .with("kvsname", "kvs_1_0")
            .with("key", "a")
            .with("value", "x=1;y=2");
        assert_eq!(
            m.to_v1_line(),
            "cmd=put kvsname=kvs_1_0 key=a value=x=1;y=2\n"
        );
        assert_eq!(Message::parse_v1(&m.to_v1_line()).unwrap(), m);
        let abort = Message::parse_v1("cmd=abort exitcode=3 message=it all went wrong\n").unwrap();
        assert_eq!(abort.get("exitcode"), Some("3"));
        assert_eq!(abort.get("message"), Some("it all went wrong"));
        assert!(Message::parse_v1("value=1\n").is_err());
        assert!(Message::parse_v1("\n").is_err());
        assert!(Message::parse_v1("cmd= x=1").is_err());
        assert!(Message::parse_v1("mcmd=spawn").is_err());
    }

    #[test]
    fn v2_frames_either_padding() {
        let m = Message::new("kvs-get").with("srcid", 3).with("key", "k");
        let frame = m.to_v2_frame().unwrap();
        assert_eq!(frame, b"    26cmd=kvs-get;srcid=3;key=k;");
        assert_eq!(parse_frame_length(&frame[..6]).unwrap(), 26);
        assert_eq!(parse_frame_length(b"26    ").unwrap(), 26);
        assert!(parse_frame_length(b"2x    ").is_err());
        assert_eq!(
            Message::parse_v2(std::str::from_utf8(&frame[6..]).unwrap()).unwrap(),
            m
        );
        assert!(Message::parse_v2("key=1;").is_err());
        assert!(Message::parse_v2("cmd=x;novalue;").is_err());
    }
}
