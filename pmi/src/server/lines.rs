//! Reading a client's PMI-1 lines with a length limit, so that a client that never sends a
//! newline cannot make the server buffer without end.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Why no line could be read.
#[derive(Debug)]
pub enum LineError {
    /// No newline within this many bytes.
    TooLong(usize),
    NotText,
    /// The connection closed in the middle of a line (what came so far).
    Truncated(String),
    Io(io::Error),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::TooLong(max) => write!(f, "a line longer than {max} bytes"),
            LineError::NotText => f.write_str("a line that is not UTF-8 text"),
            LineError::Truncated(start) => {
                write!(
                    f,
                    "the connection closed in the middle of a line ({start:?})"
                )
            }
            LineError::Io(e) => write!(f, "{e}"),
        }
    }
}

pub struct LineReader<R> {
    inner: R,
    buffer: Vec<u8>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> LineReader<R> {
        LineReader {
            inner,
            buffer: Vec::new(),
            max,
        }
    }

    /// The next line without its newline; `Ok(None)` when the connection closed between lines.
    pub async fn next_line(&mut self) -> Result<Option<String>, LineError> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                if end + 1 > self.max {
                    return Err(LineError::TooLong(self.max));
                }
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return String::from_utf8(line[..end].to_vec())
                    .map(Some)
                    .map_err(|_| LineError::NotText);
            }
            if self.buffer.len() >= self.max {
                return Err(LineError::TooLong(self.max));
            }
            if self.fill().await.map_err(LineError::Io)? == 0 {
                if self.buffer.is_empty() {
                    return Ok(None);
                }
                let start = String::from_utf8_lossy(&self.buffer[..self.buffer.len().min(100)]);
                return Err(LineError::Truncated(start.into_owned()));
            }
        }
    }

    /// Reads what arrives next into the buffer; 0 at the end of the stream. Cancel-safe: if
    /// the future is dropped before it completes, nothing was read.
    pub async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 4096];
        let n = self.inner.read(&mut chunk).await?;
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(n)
    }
}
