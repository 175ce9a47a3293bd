//! The PMI-1 server our `mpirun` runs (feature `server`, tokio).
//!
//! ```text
//!   mpirun ── serve_rank(r, socket) ──▶ session ─┐
//!          ── listen(addr) ─▶ accept ─▶ session ─┼─▶ JobState (presence, KVS, barrier)
//!          ◀── next_event() ◀── ServerEvent ◀────┘
//! ```
//!
//! Ranks on the launcher's host get one end of a socket pair each (`PMI_FD`); the server
//! knows the rank from the socket. Ranks on other hosts connect over TCP (`PMI_PORT`) and
//! must first send `cmd=initack pmiid=<rank> jobkey=<hex>` with the job's secret
//! ([`JobKey`], compared in constant time); a connection that fails this (wrong or missing
//! key, unknown or taken rank, anything else first, nothing within
//! [`ServerConfig::handshake_timeout`]) gets `cmd=initack rc=-1 msg=...`, is closed, and
//! changes nothing but a [`ServerEvent::Rejected`].
//!
//! Commands served: `init`, `get_maxes`, `get_appnum`, `get_my_kvsname`,
//! `get_universe_size`, `put`, `get`, `barrier_in`, `abort`, `finalize` (and `initack` over
//! TCP), which is what MPICH's simple PMI and our [`Client`](crate::Client) use. A line that
//! is not a PMI-1 message, or is longer than [`ServerConfig::max_line`], gets `cmd=error
//! rc=-1 msg=...` and the connection is closed; an unknown command gets `cmd=error` and the
//! connection stays. Nothing a client sends can make the server panic.

mod key;
mod lines;
mod session;
mod state;

pub use key::JobKey;

use session::{Origin, Shared};
use state::JobState;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// Limits the server announces in `cmd=maxes` and enforces on `put` (NUL included, as MPICH
/// counts; these are Hydra's values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub kvsname_max: usize,
    pub keylen_max: usize,
    pub vallen_max: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            kvsname_max: 256,
            keylen_max: 64,
            vallen_max: 1024,
        }
    }
}

/// What the server serves.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Ranks in the job.
    pub size: usize,
    /// The job's key-value space name (`get_my_kvsname`); no spaces.
    pub kvs_name: String,
    /// `get_universe_size`.
    pub universe_size: usize,
    /// `get_appnum`.
    pub appnum: u32,
    /// The secret TCP clients must present; [`Server::listen`] needs one.
    pub job_key: Option<JobKey>,
    /// `PMI_process_mapping` (see [`crate::mapping`]), found by `get` from the start.
    pub process_mapping: Option<String>,
    /// Other keys found by `get` from the start (a spawned job's `PARENT_ROOT_PORT_NAME`).
    pub preput: Vec<(String, String)>,
    pub limits: Limits,
    /// How long a TCP client has to complete `initack`.
    pub handshake_timeout: Duration,
    /// The longest line accepted from a client, newline included.
    pub max_line: usize,
}

impl ServerConfig {
    /// Defaults for a job of `size` ranks: kvsname `kvs_<pid>_0` (Hydra's form), universe =
    /// size, appnum 0, no job key, no mapping, Hydra's limits, 10 s handshakes, 4 KiB lines.
    pub fn new(size: usize) -> ServerConfig {
        ServerConfig {
            size,
            kvs_name: format!("kvs_{}_0", std::process::id()),
            universe_size: size,
            appnum: 0,
            job_key: None,
            process_mapping: None,
            preput: Vec::new(),
            limits: Limits::default(),
            handshake_timeout: Duration::from_secs(10),
            max_line: 4096,
        }
    }
}

/// What the server tells the launcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// A rank sent `init` (or, over TCP, passed `initack`).
    Initialized { rank: usize },
    /// A rank asked to end the job.
    Aborted {
        rank: usize,
        code: i32,
        message: String,
    },
    /// A rank finalized.
    Finalized { rank: usize },
    /// The connection of an initialized rank closed or failed before it finalized or
    /// aborted (or it broke the protocol and was disconnected).
    ConnectionLost { rank: usize, detail: String },
    /// A TCP connection that did not complete the handshake.
    Rejected { peer: SocketAddr, reason: String },
    /// A rank asks for a new job (PMI-1 `mcmd=spawn`): the launcher starts it (or not) and
    /// says so with [`Server::answer_spawn`]`(id, ..)`, which the rank waits for.
    Spawn {
        rank: usize,
        id: u64,
        commands: Vec<crate::SpawnCommand>,
        /// Keys to store in the new job's key-value space (`PARENT_ROOT_PORT_NAME`).
        preput: Vec<(String, String)>,
    },
}

/// Why a server cannot be made or cannot listen.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("a PMI job has at least one rank")]
    NoRanks,
    #[error("the kvsname {0:?} must be 1 to {1} characters without spaces, ';' or '='")]
    BadKvsName(String, usize),
    #[error("the process mapping {0:?} is not a PMI value (no spaces)")]
    BadMapping(String),
    #[error("rank {rank}: {reason}")]
    Rank { rank: usize, reason: String },
    #[error("listening for ranks on other hosts needs a job key (ServerConfig::job_key)")]
    NoJobKey,
    #[error("cannot serve PMI on {address}: {source}")]
    Io {
        address: String,
        #[source]
        source: io::Error,
    },
}

/// The PMI-1 server of one job. Serving needs a tokio runtime (tasks are spawned on it);
/// dropping the server stops listening and ends every connection's task.
pub struct Server {
    shared: Arc<Shared>,
    events: mpsc::UnboundedReceiver<ServerEvent>,
    tasks: Vec<AbortHandle>,
}

impl Server {
    pub fn new(config: ServerConfig) -> Result<Server, ServerError> {
        if config.size == 0 {
            return Err(ServerError::NoRanks);
        }
        let name_ok = !config.kvs_name.is_empty()
            && config.kvs_name.len() < config.limits.kvsname_max
            && !config
                .kvs_name
                .contains(|c: char| c.is_whitespace() || c == ';' || c == '=');
        if !name_ok {
            return Err(ServerError::BadKvsName(
                config.kvs_name.clone(),
                config.limits.kvsname_max - 1,
            ));
        }
        if let Some(mapping) = &config.process_mapping {
            if mapping.is_empty() || mapping.contains(char::is_whitespace) {
                return Err(ServerError::BadMapping(mapping.clone()));
            }
        }
        let preput = config
            .process_mapping
            .iter()
            .map(|m| (crate::PROCESS_MAPPING.to_string(), m.clone()))
            .chain(config.preput.iter().cloned());
        let state = JobState::new(config.size, preput);
        let (sender, events) = mpsc::unbounded_channel();
        Ok(Server {
            shared: Arc::new(Shared {
                config,
                state: Mutex::new(state),
                events: sender,
                spawns: Mutex::new(Default::default()),
            }),
            events,
            tasks: Vec::new(),
        })
    }

    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Serves rank `rank` over `socket`, this process's end of a socket pair whose other end
    /// the rank inherits as `PMI_FD`.
    pub fn serve_rank(
        &mut self,
        rank: usize,
        socket: std::os::unix::net::UnixStream,
    ) -> Result<(), ServerError> {
        self.shared
            .lock()
            .claim(rank)
            .map_err(|reason| ServerError::Rank { rank, reason })?;
        let io_error = |source| ServerError::Io {
            address: format!("the socket of rank {rank}"),
            source,
        };
        socket.set_nonblocking(true).map_err(io_error)?;
        let stream = tokio::net::UnixStream::from_std(socket).map_err(io_error)?;
        let shared = Arc::clone(&self.shared);
        let task = tokio::spawn(session::serve(shared, stream, Origin::Rank(rank)));
        self.tasks.push(task.abort_handle());
        Ok(())
    }

    /// Listens on `address` for ranks on other hosts (port 0: any free port); returns the
    /// address bound.
    pub async fn listen(&mut self, address: SocketAddr) -> Result<SocketAddr, ServerError> {
        if self.shared.config.job_key.is_none() {
            return Err(ServerError::NoJobKey);
        }
        let io_error = |source| ServerError::Io {
            address: address.to_string(),
            source,
        };
        let listener = TcpListener::bind(address).await.map_err(io_error)?;
        let bound = listener.local_addr().map_err(io_error)?;
        let shared = Arc::clone(&self.shared);
        let task = tokio::spawn(accept_loop(shared, listener));
        self.tasks.push(task.abort_handle());
        tracing::debug!(target: "pmi", %bound, "serving PMI over TCP");
        Ok(bound)
    }

    /// The next event; `None` never (the server holds a sender itself), so use it in
    /// `select!` beside other sources.
    pub async fn next_event(&mut self) -> Option<ServerEvent> {
        self.events.recv().await
    }

    /// Answers spawn request `id` ([`ServerEvent::Spawn`]): `Ok` once the new job started,
    /// or why it could not.
    pub fn answer_spawn(&self, id: u64, answer: Result<(), String>) {
        let sender = self
            .shared
            .spawns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .waiting
            .remove(&id);
        if let Some(sender) = sender {
            let _ = sender.send(answer);
        }
    }

    /// An event if one is waiting.
    pub fn try_next_event(&mut self) -> Option<ServerEvent> {
        self.events.try_recv().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Accepts TCP clients. Their sessions live in a `JoinSet` owned by this task, so aborting
/// the task (dropping the server) ends them too.
async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let mut sessions = tokio::task::JoinSet::new();
    loop {
        while sessions.try_join_next().is_some() {}
        match listener.accept().await {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                // A session ends by itself: at the handshake deadline at the latest for a
                // stranger, when the connection closes for a rank.
                sessions.spawn(session::serve(
                    Arc::clone(&shared),
                    stream,
                    Origin::Remote(peer),
                ));
            }
            Err(e) => {
                // Out of descriptors and the like: wait a little rather than spin.
                tracing::warn!(target: "pmi", error = %e, "accepting a PMI connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
