//! A fake process manager: PMI-1 (MPICH's simple PMI, as Hydra speaks it) over an inherited
//! `PMI_FD`, to one real rank. It serves the key-value space honestly, plays the other ranks
//! of the job by answering for their cards ([`Script::fake_card`]), and can break one reply
//! on purpose ([`Fault`]).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How a reply is broken.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// These bytes instead of the reply; then the server goes on.
    Reply(&'static [u8]),
    /// These bytes instead of the reply, then the connection closes.
    ReplyAndClose(&'static [u8]),
    /// The connection closes instead of the reply.
    Close,
    /// No reply, ever; the connection stays open.
    Silent,
}

impl Fault {
    /// The fault in words, for the tests' output.
    pub fn describe(&self) -> String {
        match self {
            Fault::Reply(b) => format!("reply {:?}", String::from_utf8_lossy(b)),
            Fault::ReplyAndClose(b) => {
                format!("reply {:?}, then close", String::from_utf8_lossy(b))
            }
            Fault::Close => "close".into(),
            Fault::Silent => "silence".into(),
        }
    }
}

/// What the fake process manager does.
pub struct Script {
    /// The real process's rank, and the job's size.
    pub rank: usize,
    pub size: usize,
    /// The broken reply: to the first request of this command (`init`, `get_maxes`,
    /// `get_my_kvsname`, `put`, `barrier_in`, `get`).
    pub fault: Option<(&'static str, Fault)>,
    /// The card of fake rank `r`, made from the real rank's card.
    #[allow(clippy::type_complexity)]
    pub fake_card: Option<Box<dyn Fn(usize, &str) -> String + Send>>,
}

/// The key under which the PMI client files rank `r`'s card (`r<rank>.` and the library's
/// key `nic-card-<rank>`).
pub fn card_key(rank: usize) -> String {
    format!("r{rank}.nic-card-{rank}")
}

#[derive(Default)]
struct State {
    requests: Vec<String>,
    /// Decoded values by the client's (qualified) key.
    kvs: HashMap<String, String>,
    aborted: Option<String>,
}

/// The running fake; stops when dropped.
pub struct Server {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The real rank's end of the connection, to be passed to it as `PMI_FD`.
pub struct ClientEnd(UnixStream);

impl ClientEnd {
    /// Makes `command` inherit this end as `PMI_FD`, with `PMI_RANK` and `PMI_SIZE` as
    /// Hydra sets them.
    pub fn pass_to(&self, command: &mut Command, rank: usize, size: usize) {
        let fd = self.0.as_raw_fd();
        command
            .env("PMI_FD", fd.to_string())
            .env("PMI_RANK", rank.to_string())
            .env("PMI_SIZE", size.to_string());
        // SAFETY: the closure runs in the child between fork and exec and calls fcntl
        // only, which is async-signal-safe; `fd` is open there (inherited: `self` keeps it
        // open here until after the spawn). It clears close-on-exec in the child alone.
        unsafe {
            command.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

impl Server {
    /// Starts serving; give the [`ClientEnd`] to the real rank, then drop it.
    pub fn start(script: Script) -> (Server, ClientEnd) {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (state.clone(), stop.clone());
            thread::spawn(move || serve(ours, script, &state, &stop))
        };
        (
            Server {
                state,
                stop,
                thread: Some(thread),
            },
            ClientEnd(theirs),
        )
    }

    /// The request lines received so far.
    pub fn requests(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .requests
            .clone()
    }

    /// The message of the client's `abort`, if it sent one.
    pub fn aborted(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .aborted
            .clone()
    }

    /// What the real rank put under `key` (qualified), waiting at most `limit` for it.
    pub fn wait_put(&self, key: &str, limit: Duration) -> Option<String> {
        let end = Instant::now() + limit;
        loop {
            let value = self
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .kvs
                .get(key)
                .cloned();
            if value.is_some() || Instant::now() >= end {
                return value;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves one client until it closes, the script closes, or the server is stopped.
fn serve(stream: UnixStream, mut script: Script, state: &Mutex<State>, stop: &AtomicBool) {
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("a read timeout");
    let mut writer = stream.try_clone().expect("a second handle");
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut silent = false;
    while !stop.load(Ordering::Relaxed) {
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) if line.ends_with(b"\n") => {}
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        let request = String::from_utf8_lossy(&line).trim_end().to_owned();
        line.clear();
        let fields = parse(&request);
        let cmd = fields.get("cmd").cloned().unwrap_or_default();
        state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .requests
            .push(request.clone());
        if silent {
            continue;
        }
        if let Some((at, fault)) = script.fault {
            if at == cmd {
                script.fault = None;
                match fault {
                    Fault::Reply(bytes) => {
                        let _ = writer.write_all(bytes);
                        continue;
                    }
                    Fault::ReplyAndClose(bytes) => {
                        let _ = writer.write_all(bytes);
                        return;
                    }
                    Fault::Close => return,
                    Fault::Silent => {
                        silent = true;
                        continue;
                    }
                }
            }
        }
        let reply = answer(&cmd, &fields, &script, state);
        if let Some(reply) = reply {
            if writer.write_all(reply.as_bytes()).is_err() {
                return;
            }
        }
    }
}

/// The honest reply to a request (`None` for `abort`, which has none).
fn answer(
    cmd: &str,
    fields: &HashMap<String, String>,
    script: &Script,
    state: &Mutex<State>,
) -> Option<String> {
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    let field = |k: &str| fields.get(k).cloned().unwrap_or_default();
    Some(match cmd {
        "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".into(),
        "get_maxes" => "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n".into(),
        "get_my_kvsname" => "cmd=my_kvsname rc=0 kvsname=fake_kvs\n".into(),
        "put" => {
            let value = decode(&field("value"));
            state.kvs.insert(field("key"), value);
            "cmd=put_result rc=0 msg=success\n".into()
        }
        "barrier_in" => "cmd=barrier_out rc=0\n".into(),
        "get" => {
            let key = field("key");
            let fake = (0..script.size)
                .filter(|&r| r != script.rank && key == card_key(r))
                .find_map(|r| {
                    let real = state.kvs.get(&card_key(script.rank))?;
                    script.fake_card.as_ref().map(|make| make(r, real))
                });
            match fake.or_else(|| state.kvs.get(&key).cloned()) {
                Some(v) => format!("cmd=get_result rc=0 msg=success value={}\n", encode(&v)),
                None => "cmd=get_result rc=-1 msg=key_not_found\n".into(),
            }
        }
        "abort" => {
            state.aborted = Some(field("message"));
            return None;
        }
        "finalize" => "cmd=finalize_ack rc=0\n".into(),
        other => format!("cmd={other}_result rc=-1 msg=not_supported_by_the_fake\n"),
    })
}

/// The fields of a PMI-1 line (`key=value` words; a word without `=` continues the value
/// before it).
fn parse(line: &str) -> HashMap<String, String> {
    let mut fields = HashMap::new();
    let mut last: Option<String> = None;
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        match word.split_once('=') {
            Some((k, v)) => {
                fields.insert(k.to_owned(), v.to_owned());
                last = Some(k.to_owned());
            }
            None => {
                if let Some(v) = last.as_ref().and_then(|k| fields.get_mut(k)) {
                    v.push(' ');
                    v.push_str(word);
                }
            }
        }
    }
    fields
}

/// The PMI client's value encoding: bytes outside `!`..`~`, and `%`, `;`, `\`, as `%XX`.
pub fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if (b'!'..=b'~').contains(&b) && !matches!(b, b'%' | b';' | b'\\') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Undoes [`encode`] (a malformed escape is kept as it is).
pub fn decode(wire: &str) -> String {
    let bytes = wire.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of field `name` in a card (`k=v;k=v`).
pub fn card_field<'a>(card: &'a str, name: &str) -> Option<&'a str> {
    card.split(';')
        .filter_map(|f| f.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}
