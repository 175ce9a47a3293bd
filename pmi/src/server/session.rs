//! One client connection: the TCP handshake (for ranks on other hosts), then one PMI-1
//! request at a time until `finalize` or the end of the connection.

use super::lines::{LineError, LineReader};
use super::state::{JobState, Presence};
use super::{ServerConfig, ServerEvent};
use crate::wire::Message;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

/// What every session shares.
pub struct Shared {
    pub config: ServerConfig,
    pub state: Mutex<JobState>,
    pub events: mpsc::UnboundedSender<ServerEvent>,
    /// Spawn requests waiting for the launcher's answer ([`super::Server::answer_spawn`]).
    pub spawns: Mutex<SpawnAnswers>,
}

/// The answers the launcher owes to spawn requests, by request id.
#[derive(Default)]
pub struct SpawnAnswers {
    pub next_id: u64,
    pub waiting: std::collections::HashMap<u64, tokio::sync::oneshot::Sender<Result<(), String>>>,
}

impl Shared {
    /// The state; a session that panicked while holding it left nothing half-done that
    /// matters more than serving the others, so a poisoned lock is taken over.
    pub fn lock(&self) -> MutexGuard<'_, JobState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn emit(&self, event: ServerEvent) {
        tracing::debug!(target: "pmi", ?event, "PMI event");
        let _ = self.events.send(event);
    }
}

/// Where a connection comes from.
pub enum Origin {
    /// An inherited socket: the rank is known.
    Rank(usize),
    /// A TCP client, which must complete `initack` first.
    Remote(SocketAddr),
}

/// How long a refusal may take to write before the connection is dropped anyway.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Serves one connection to its end.
pub async fn serve<S>(shared: Arc<Shared>, stream: S, origin: Origin)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (read, write) = tokio::io::split(stream);
    let mut reader = LineReader::new(read, shared.config.max_line);
    let mut write = write;
    let rank = match origin {
        Origin::Rank(rank) => rank,
        Origin::Remote(peer) => match handshake(&shared, &mut reader, &mut write, peer).await {
            Some(rank) => rank,
            None => return,
        },
    };
    let mut session = Session {
        shared,
        rank,
        reader,
        write,
        spawning: Vec::new(),
        spawn_preput: Vec::new(),
    };
    session.run().await;
}

/// Checks a TCP client's `initack`; its rank, or `None` after refusing it.
async fn handshake<S>(
    shared: &Shared,
    reader: &mut LineReader<ReadHalf<S>>,
    write: &mut WriteHalf<S>,
    peer: SocketAddr,
) -> Option<usize>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let limit = shared.config.handshake_timeout;
    let outcome = match tokio::time::timeout(limit, reader.next_line()).await {
        Err(_) => Err(format!("no initack within {} s", limit.as_secs_f64())),
        Ok(Ok(None)) => Err("the connection closed before initack".to_string()),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(Some(line))) => check_initack(shared, &line),
    };
    match outcome {
        Ok(rank) => {
            let size = shared.config.size;
            let reply = format!(
                "cmd=initack rc=0\ncmd=set size={size}\ncmd=set rank={rank}\ncmd=set debug=0\n"
            );
            if let Err(e) = write.write_all(reply.as_bytes()).await {
                let detail = format!("writing the initack reply failed: {e}");
                lose(shared, rank, detail);
                return None;
            }
            if shared.lock().initialize(rank) {
                shared.emit(ServerEvent::Initialized { rank });
            }
            tracing::debug!(target: "pmi", rank, %peer, "rank connected over TCP");
            Some(rank)
        }
        Err(reason) => {
            tracing::info!(target: "pmi", %peer, %reason, "refused a PMI connection");
            let reply = Message::new("initack")
                .with("rc", -1)
                .with("msg", wire_text(&reason));
            let _ = tokio::time::timeout(
                REFUSAL_WRITE,
                write.write_all(reply.to_v1_line().as_bytes()),
            )
            .await;
            let _ = tokio::time::timeout(REFUSAL_WRITE, write.shutdown()).await;
            shared.emit(ServerEvent::Rejected { peer, reason });
            None
        }
    }
}

/// The rank an `initack` line claims, if its key is right and the rank free.
fn check_initack(shared: &Shared, line: &str) -> Result<usize, String> {
    let message =
        Message::parse_v1(line).map_err(|problem| format!("malformed line: {problem}"))?;
    if message.cmd != "initack" {
        return Err(format!(
            "expected cmd=initack first, got cmd={}",
            message.cmd
        ));
    }
    // The key first: a stranger learns nothing about ranks and claims none.
    let key_ok = match (&shared.config.job_key, message.get("jobkey")) {
        (Some(key), Some(candidate)) => key.matches_hex(candidate),
        _ => false,
    };
    if !key_ok {
        return Err("wrong or missing job key (jobkey=, from MPI_PMI_KEY)".to_string());
    }
    let rank = message
        .get("pmiid")
        .and_then(|id| id.trim().parse::<usize>().ok())
        .ok_or_else(|| "no pmiid=RANK".to_string())?;
    shared.lock().claim(rank)?;
    Ok(rank)
}

/// Marks `rank` lost (and says so if it had initialized).
fn lose(shared: &Shared, rank: usize, detail: String) {
    let mut state = shared.lock();
    let initialized = state.presence(rank) == Presence::Initialized;
    if state.leave(rank, Presence::Lost) && initialized {
        drop(state);
        shared.emit(ServerEvent::ConnectionLost { rank, detail });
    } else {
        tracing::debug!(target: "pmi", rank, %detail, "PMI connection ended");
    }
}

/// Free text as one PMI-1 word.
fn wire_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_whitespace() || c == ';' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// What to do after a request.
enum Next {
    Continue,
    Close,
}

struct Session<S> {
    shared: Arc<Shared>,
    rank: usize,
    reader: LineReader<ReadHalf<S>>,
    write: WriteHalf<S>,
    /// The blocks of a spawn request received so far.
    spawning: Vec<crate::SpawnCommand>,
    spawn_preput: Vec<(String, String)>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    async fn run(&mut self) {
        loop {
            let line = match self.reader.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return self.ended("the connection closed"),
                Err(LineError::Io(e)) => return self.ended(&format!("reading failed: {e}")),
                Err(e) => return self.refuse_and_close(&e.to_string()).await,
            };
            if line.trim() == "mcmd=spawn" {
                match self.spawn_block().await {
                    Next::Continue => continue,
                    Next::Close => return,
                }
            }
            let message = match Message::parse_v1(&line) {
                Ok(message) => message,
                Err(problem) => {
                    let detail = format!("malformed line {line:?}: {problem}");
                    return self.refuse_and_close(&detail).await;
                }
            };
            tracing::trace!(target: "pmi", rank = self.rank, %line, "request");
            match self.handle(message).await {
                Next::Continue => {}
                Next::Close => return,
            }
        }
    }

    async fn handle(&mut self, request: Message) -> Next {
        let config = &self.shared.config;
        let reply = match request.cmd.as_str() {
            "init" => return self.init(&request).await,
            "get_maxes" => Message::new("maxes")
                .with("rc", 0)
                .with("kvsname_max", config.limits.kvsname_max)
                .with("keylen_max", config.limits.keylen_max)
                .with("vallen_max", config.limits.vallen_max),
            "get_appnum" => Message::new("appnum")
                .with("rc", 0)
                .with("appnum", config.appnum),
            "get_my_kvsname" => Message::new("my_kvsname")
                .with("rc", 0)
                .with("kvsname", &config.kvs_name),
            "get_universe_size" => Message::new("universe_size")
                .with("rc", 0)
                .with("size", config.universe_size),
            "put" => self.put(&request),
            "get" => self.get(&request),
            "barrier_in" => return self.barrier().await,
            "abort" => {
                self.abort(&request);
                return Next::Continue;
            }
            "finalize" => return self.finalize().await,
            "initack" => failure("initack", "this connection is set up already"),
            other => failure("error", &format!("unknown command {other}")),
        };
        self.send(&reply).await
    }

    /// One `mcmd=spawn` block (its first line read already): `key=value` lines up to
    /// `endcmd`. The last block of a request (`spawnssofar` = `totspawns`) goes to the
    /// launcher as [`ServerEvent::Spawn`]; its answer is the `spawn_result` reply.
    async fn spawn_block(&mut self) -> Next {
        let mut fields: Vec<(String, String)> = Vec::new();
        for _ in 0..4096 {
            let line = match self.reader.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => {
                    self.ended("the connection closed inside a spawn request");
                    return Next::Close;
                }
                Err(e) => {
                    self.refuse_and_close(&e.to_string()).await;
                    return Next::Close;
                }
            };
            if line.trim() == "endcmd" {
                return self.spawn_part(fields).await;
            }
            match line.split_once('=') {
                Some((k, v)) => fields.push((k.trim().to_string(), v.to_string())),
                None => {
                    let detail = format!("malformed spawn line {line:?}");
                    self.refuse_and_close(&detail).await;
                    return Next::Close;
                }
            }
        }
        self.refuse_and_close("a spawn request without endcmd")
            .await;
        Next::Close
    }

    async fn spawn_part(&mut self, fields: Vec<(String, String)>) -> Next {
        let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let num = |k: &str| get(k).and_then(|v| v.trim().parse::<usize>().ok());
        let (Some(nprocs), Some(command)) = (num("nprocs"), get("execname")) else {
            let reply = failure("spawn_result", "a spawn block needs nprocs= and execname=");
            return self.send(&reply).await;
        };
        let argcnt = num("argcnt").unwrap_or(0).min(4096);
        let args = (1..=argcnt)
            .map(|j| get(&format!("arg{j}")).unwrap_or("").to_string())
            .collect();
        let pairs = |n: &str, k: &str, v: &str| -> Vec<(String, String)> {
            (0..num(n).unwrap_or(0).min(4096))
                .filter_map(|j| {
                    Some((
                        get(&format!("{k}{j}"))?.to_string(),
                        get(&format!("{v}{j}")).unwrap_or("").to_string(),
                    ))
                })
                .collect()
        };
        let info = pairs("info_num", "info_key_", "info_val_");
        let preput = pairs("preput_num", "preput_key_", "preput_val_");
        let total = num("totspawns").unwrap_or(1).max(1);
        let sofar = num("spawnssofar").unwrap_or(1);
        self.spawning.push(crate::SpawnCommand {
            command: command.to_string(),
            args,
            nprocs,
            info,
        });
        self.spawn_preput = preput;
        if sofar < total && self.spawning.len() < total {
            return Next::Continue;
        }
        let commands = std::mem::take(&mut self.spawning);
        let preput = std::mem::take(&mut self.spawn_preput);
        let (sender, answer) = tokio::sync::oneshot::channel();
        let id = {
            let mut spawns = self.shared.spawns.lock().unwrap_or_else(|p| p.into_inner());
            let id = spawns.next_id;
            spawns.next_id += 1;
            spawns.waiting.insert(id, sender);
            id
        };
        self.shared.emit(ServerEvent::Spawn {
            rank: self.rank,
            id,
            commands,
            preput,
        });
        let reply = match answer.await {
            Ok(Ok(())) => Message::new("spawn_result").with("rc", 0),
            Ok(Err(why)) => failure("spawn_result", &why),
            Err(_) => failure("spawn_result", "the launcher did not answer"),
        };
        self.send(&reply).await
    }

    async fn init(&mut self, request: &Message) -> Next {
        let version = request.get("pmi_version").unwrap_or("").trim();
        let reply = if version == "1" {
            if self.shared.lock().initialize(self.rank) {
                self.shared
                    .emit(ServerEvent::Initialized { rank: self.rank });
            }
            Message::new("response_to_init").with("rc", 0)
        } else {
            Message::new("response_to_init").with("rc", -1).with(
                "msg",
                format!("this server speaks PMI-1 only, not version {version:?}"),
            )
        };
        let reply = reply.with("pmi_version", 1).with("pmi_subversion", 1);
        self.send(&reply).await
    }

    fn put(&mut self, request: &Message) -> Message {
        let limits = self.shared.config.limits;
        if let Err(reason) = self.check_kvsname(request) {
            return failure("put_result", &reason);
        }
        let (Some(key), Some(value)) = (request.get("key"), request.get("value")) else {
            return failure("put_result", "put needs key= and value=");
        };
        if key.is_empty() || key.len() >= limits.keylen_max {
            return failure(
                "put_result",
                &format!("keys are 1 to {} characters", limits.keylen_max - 1),
            );
        }
        if value.len() >= limits.vallen_max {
            return failure(
                "put_result",
                &format!("values are at most {} characters", limits.vallen_max - 1),
            );
        }
        self.shared.lock().put(key.to_string(), value.to_string());
        Message::new("put_result")
            .with("rc", 0)
            .with("msg", "success")
    }

    fn get(&mut self, request: &Message) -> Message {
        if let Err(reason) = self.check_kvsname(request) {
            return failure("get_result", &reason);
        }
        let Some(key) = request.get("key") else {
            return failure("get_result", "get needs key=");
        };
        let found = self.shared.lock().get(key).map(str::to_string);
        match found {
            Some(value) => Message::new("get_result")
                .with("rc", 0)
                .with("msg", "success")
                .with("value", value),
            None => Message::new("get_result")
                .with("rc", -1)
                .with("msg", wire_text(&format!("key_{key}_not_found"))),
        }
    }

    fn check_kvsname(&self, request: &Message) -> Result<(), String> {
        match request.get("kvsname") {
            Some(name) if name != self.shared.config.kvs_name => {
                Err(format!("unknown kvsname {name}"))
            }
            _ => Ok(()),
        }
    }

    /// Waits for the barrier, watching the connection meanwhile: a client that closes it
    /// while waiting is lost (which fails the barrier for the others), and one that sends
    /// anything has broken the lock-step protocol.
    async fn barrier(&mut self) -> Next {
        let mut outcome = self.shared.lock().enter_barrier(self.rank);
        let result = tokio::select! {
            result = &mut outcome => result,
            read = self.reader.fill() => {
                match read {
                    Ok(0) => self.ended("the connection closed while in a barrier"),
                    Ok(_) => {
                        let detail = "sent a request while waiting in a barrier";
                        self.refuse_and_close(detail).await;
                    }
                    Err(e) => self.ended(&format!("reading failed while in a barrier: {e}")),
                }
                return Next::Close;
            }
        };
        let reply = match result {
            Ok(Ok(())) => Message::new("barrier_out").with("rc", 0),
            Ok(Err(reason)) => failure("barrier_out", &reason),
            Err(_) => failure("barrier_out", "the server is shutting down"),
        };
        self.send(&reply).await
    }

    fn abort(&mut self, request: &Message) {
        let code = request
            .get("exitcode")
            .and_then(|c| c.trim().parse::<i32>().ok())
            .unwrap_or(1);
        let message = request.get("message").unwrap_or("").to_string();
        let newly = self.shared.lock().leave(self.rank, Presence::Aborted);
        if newly {
            self.shared.emit(ServerEvent::Aborted {
                rank: self.rank,
                code,
                message,
            });
        }
    }

    async fn finalize(&mut self) -> Next {
        let reply = Message::new("finalize_ack").with("rc", 0);
        let newly = self.shared.lock().leave(self.rank, Presence::Finalized);
        if newly {
            self.shared.emit(ServerEvent::Finalized { rank: self.rank });
        }
        let _ = self.write.write_all(reply.to_v1_line().as_bytes()).await;
        let _ = self.write.shutdown().await;
        Next::Close
    }

    async fn send(&mut self, reply: &Message) -> Next {
        match self.write.write_all(reply.to_v1_line().as_bytes()).await {
            Ok(()) => Next::Continue,
            Err(e) => {
                self.ended(&format!("writing a reply failed: {e}"));
                Next::Close
            }
        }
    }

    /// Tells the client what it did wrong, closes, and records the rank as lost.
    async fn refuse_and_close(&mut self, detail: &str) {
        let reply = failure("error", detail);
        let _ = tokio::time::timeout(
            REFUSAL_WRITE,
            self.write.write_all(reply.to_v1_line().as_bytes()),
        )
        .await;
        let _ = tokio::time::timeout(REFUSAL_WRITE, self.write.shutdown()).await;
        self.ended(&format!("protocol error: {detail}"));
    }

    fn ended(&self, detail: &str) {
        lose(&self.shared, self.rank, detail.to_string());
    }
}

/// A reply `cmd` with `rc=-1` and `msg` (as one word).
fn failure(cmd: &str, msg: &str) -> Message {
    Message::new(cmd).with("rc", -1).with("msg", wire_text(msg))
}
