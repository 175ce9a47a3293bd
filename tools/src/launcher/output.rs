//! Forwarding the ranks' stdout and stderr to `mpirun`'s own, whole lines at a time.
//!
//! Every rank's stdout and stderr is a pipe read by a [`forward`] task, which cuts what it
//! reads at the last newline and sends complete lines as one [`Chunk`]. One [`Writer`] thread
//! per destination (`mpirun`'s stdout, `mpirun`'s stderr) writes chunks in arrival order, so a
//! line of one rank is never split by a line of another. With `-l` the writer puts `[rank] `
//! before every line.
//!
//! A line that is not finished is held back, but not forever: after [`IDLE_FLUSH`] without
//! more data (a prompt, progress dots), or once it reaches [`LONGEST_HELD`] bytes, the part
//! read so far goes out. If another rank's line then comes before its end, the writer ends the
//! open line first, and (with `-l`) tags the rest again when it comes, so lines stay whole. At
//! the end of a stream a tagged last line without a newline gets one; untagged output keeps
//! the bytes the rank wrote.
//!
//! The channels to the writers are bounded: when `mpirun`'s own output is not being read, the
//! ranks' pipes fill and the ranks wait, as they would writing to a terminal, while the
//! supervisor (which never waits on a writer) keeps reaping, forwarding signals and timing.
//! Launcher messages ([`Sink::say`]) go through the stderr writer, so they never split a line.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsFd;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long a partial line waits for its end before it is written anyway.
pub const IDLE_FLUSH: Duration = Duration::from_millis(100);
/// The longest partial line held back.
pub const LONGEST_HELD: usize = 64 * 1024;
/// Chunks queued per writer before the forwarding tasks wait.
const QUEUE: usize = 1024;
/// Bytes read from a rank's pipe at a time.
const READ_SIZE: usize = 16 * 1024;

/// Who wrote a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Rank(usize),
    Launcher,
}

/// Bytes from one source: whole lines, except when a partial line is flushed (see the module
/// doc) or at the end of a stream.
#[derive(Debug)]
pub struct Chunk {
    pub origin: Origin,
    pub bytes: Vec<u8>,
    /// The previous chunk from this source ended mid-line and this one continues that line.
    pub continues_line: bool,
    /// The source's stream ends with this chunk.
    pub last: bool,
}

enum Message {
    Chunk(Chunk),
    /// Write out everything queued so far and stop.
    Finish,
}

/// The sending end of one writer.
#[derive(Clone)]
pub struct Sink {
    queue: mpsc::Sender<Message>,
}

impl Sink {
    async fn send(&self, chunk: Chunk) {
        // The writer only goes away after `Finish`; a chunk sent later is dropped.
        let _ = self.queue.send(Message::Chunk(chunk)).await;
    }

    /// Writes one line from `mpirun` itself, without ever waiting: if the queue is full, the
    /// line is handed to a task that waits for room.
    pub fn say(&self, line: String) {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let chunk = Chunk {
            origin: Origin::Launcher,
            bytes,
            continues_line: false,
            last: true,
        };
        if let Err(mpsc::error::TrySendError::Full(message)) =
            self.queue.try_send(Message::Chunk(chunk))
        {
            let queue = self.queue.clone();
            tokio::spawn(async move {
                let _ = queue.send(message).await;
            });
        }
    }
}

/// The thread writing to one of `mpirun`'s output streams.
pub struct Writer {
    sink: Sink,
    thread: std::thread::JoinHandle<()>,
}

impl Writer {
    /// Starts a writer to `mpirun`'s stdout (`to_stderr` false) or stderr.
    pub fn start(to_stderr: bool, tag: bool) -> io::Result<Writer> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let target: Box<dyn Write + Send> = match duplicate(to_stderr) {
            Some(file) => Box::new(BufWriter::with_capacity(64 * 1024, file)),
            // mpirun was started with this stream closed: the ranks' output goes nowhere.
            None => Box::new(io::sink()),
        };
        let name = if to_stderr {
            "mpirun-stderr"
        } else {
            "mpirun-stdout"
        };
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                write_loop(
                    receiver,
                    Formatter {
                        out: target,
                        tag,
                        open: None,
                    },
                )
            })?;
        Ok(Writer {
            sink: Sink { queue },
            thread,
        })
    }

    pub fn sink(&self) -> Sink {
        self.sink.clone()
    }

    /// Writes out everything sent before this call, flushes and stops the thread.
    pub async fn finish(self) {
        let _ = self.sink.queue.send(Message::Finish).await;
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

/// A descriptor of our own for stdout or stderr, so the writer can buffer without going
/// through the standard library's line-buffered handles.
fn duplicate(stderr: bool) -> Option<File> {
    let fd = if stderr {
        io::stderr().as_fd().try_clone_to_owned()
    } else {
        io::stdout().as_fd().try_clone_to_owned()
    };
    fd.ok().map(File::from)
}

fn write_loop(mut receiver: mpsc::Receiver<Message>, mut formatter: Formatter) {
    let mut broken = false;
    while let Some(message) = receiver.blocking_recv() {
        let mut next = Some(message);
        // Write everything already queued, then flush once.
        while let Some(message) = next.take() {
            match message {
                Message::Finish => {
                    let _ = formatter.finish();
                    return;
                }
                Message::Chunk(chunk) if !broken => {
                    if let Err(e) = formatter.put(&chunk) {
                        // Typically EPIPE: whoever read our output has gone. Keep draining so
                        // the ranks are not blocked on full pipes.
                        tracing::debug!(target: "mpirun", error = %e, "output stream closed; discarding rank output");
                        broken = true;
                    }
                }
                Message::Chunk(_) => {}
            }
            next = receiver.try_recv().ok();
        }
        if !broken && formatter.out.flush().is_err() {
            broken = true;
        }
    }
}

/// Lays chunks out as whole, optionally tagged, lines.
struct Formatter {
    out: Box<dyn Write + Send>,
    tag: bool,
    /// The source whose line was left unfinished at the end of the last chunk written.
    open: Option<Origin>,
}

impl Formatter {
    fn put(&mut self, chunk: &Chunk) -> io::Result<()> {
        let resumes = chunk.continues_line && self.open == Some(chunk.origin);
        if self.open.is_some() && !resumes {
            self.out.write_all(b"\n")?;
        }
        match chunk.origin {
            Origin::Rank(rank) if self.tag => {
                for (i, piece) in chunk.bytes.split_inclusive(|&b| b == b'\n').enumerate() {
                    if i > 0 || !resumes {
                        write!(self.out, "[{rank}] ")?;
                    }
                    self.out.write_all(piece)?;
                }
            }
            _ => self.out.write_all(&chunk.bytes)?,
        }
        let ends_line = !matches!(chunk.bytes.last(), Some(&b) if b != b'\n');
        self.open = None;
        if !ends_line {
            if chunk.last && self.tag {
                self.out.write_all(b"\n")?;
            } else {
                self.open = Some(chunk.origin);
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Copies one of a rank's pipes to `sink` until the rank closes it. Ends with a chunk marked
/// `last` if anything was held back.
pub fn forward<R>(mut pipe: R, rank: usize, sink: Sink) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let origin = Origin::Rank(rank);
        let mut held: Vec<u8> = Vec::new();
        let mut line_open = false;
        let mut buf = vec![0u8; READ_SIZE];
        loop {
            let read = if held.is_empty() {
                pipe.read(&mut buf).await
            } else {
                match tokio::time::timeout(IDLE_FLUSH, pipe.read(&mut buf)).await {
                    Ok(read) => read,
                    Err(_idle) => {
                        let bytes = std::mem::take(&mut held);
                        sink.send(Chunk {
                            origin,
                            bytes,
                            continues_line: line_open,
                            last: false,
                        })
                        .await;
                        line_open = true;
                        continue;
                    }
                }
            };
            let n = match read {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    tracing::debug!(target: "mpirun", rank, error = %e, "reading a rank's output failed");
                    break;
                }
            };
            held.extend_from_slice(&buf[..n]);
            if let Some(last_newline) = held.iter().rposition(|&b| b == b'\n') {
                let rest = held.split_off(last_newline + 1);
                let lines = std::mem::replace(&mut held, rest);
                sink.send(Chunk {
                    origin,
                    bytes: lines,
                    continues_line: line_open,
                    last: false,
                })
                .await;
                line_open = false;
            }
            if held.len() >= LONGEST_HELD {
                let bytes = std::mem::take(&mut held);
                sink.send(Chunk {
                    origin,
                    bytes,
                    continues_line: line_open,
                    last: false,
                })
                .await;
                line_open = true;
            }
        }
        if !held.is_empty() {
            sink.send(Chunk {
                origin,
                bytes: held,
                continues_line: line_open,
                last: true,
            })
            .await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn layout(tag: bool, chunks: &[(usize, &str, bool, bool)]) -> String {
        let shared = Shared::default();
        let mut f = Formatter {
            out: Box::new(shared.clone()),
            tag,
            open: None,
        };
        for &(rank, text, continues_line, last) in chunks {
            let chunk = Chunk {
                origin: Origin::Rank(rank),
                bytes: text.as_bytes().to_vec(),
                continues_line,
                last,
            };
            f.put(&chunk).unwrap();
        }
        let bytes = shared.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn tags_every_line_and_ends_a_last_partial_line() {
        assert_eq!(
            layout(true, &[(0, "a\nb\n", false, false), (1, "c", false, true)]),
            "[0] a\n[0] b\n[1] c\n"
        );
    }

    #[test]
    fn an_interrupted_partial_line_stays_whole() {
        let chunks = [
            (0, "abc", false, false),
            (1, "x\n", false, false),
            (0, "def\n", true, false),
        ];
        assert_eq!(layout(true, &chunks), "[0] abc\n[1] x\n[0] def\n");
        assert_eq!(layout(false, &chunks), "abc\nx\ndef\n");
        assert_eq!(
            layout(
                false,
                &[(0, "abc", false, false), (0, "def\n", true, false)]
            ),
            "abcdef\n"
        );
    }

    #[test]
    fn untagged_output_keeps_a_missing_final_newline() {
        assert_eq!(
            layout(false, &[(0, "no newline", false, true)]),
            "no newline"
        );
    }
}
