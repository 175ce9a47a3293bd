//! The client: one blocking connection to the process manager, speaking PMI-1 or PMI-2.
//!
//! ```text
//!   from_env ─▶ env::read ─▶ Connection (PMI_FD | TCP to PMI_PORT)
//!                              │ PMI-1: [initack] init get_maxes get_my_kvsname
//!                              │ PMI-2: init(v2, as a PMI-1 line) fullinit job-getid
//!                              ▼
//!   put / fence / get / barrier / abort / finalize, one request and one reply at a time
//! ```
//!
//! Keys are stored per rank and values percent-encoded ([`crate::value`]), so `get(r, k)`
//! returns exactly what rank `r` gave `put(k, ..)`, under every process manager.

use crate::conn::{Connection, Deadline, Patience};
use crate::env::{self, Endpoint, Settings};
use crate::error::PmiError;
use crate::value;
use crate::wire::{self, Message};
use crate::Version;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// PMI-2's fixed limits (MPICH's `pmi2.h`, Slurm's `pmi.h`), NUL included.
const PMI2_MAX_KEYLEN: usize = 64;
const PMI2_MAX_VALLEN: usize = 1024;
/// The job attribute / reserved key describing which ranks share a node.
pub const PROCESS_MAPPING: &str = "PMI_process_mapping";

/// Set once `from_env` has taken this process's PMI connection.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// A connection to the process manager that started this process.
pub struct Client {
    conn: Connection,
    version: Version,
    rank: usize,
    size: usize,
    kvs_name: String,
    /// The server's limits, NUL included (as MPICH counts them).
    server_key_max: usize,
    server_value_max: usize,
    request: Patience,
    fence: Patience,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("version", &self.version)
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("kvs_name", &self.kvs_name)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the process manager named by this process's environment (see
    /// [`crate::env`] for the variables and the protocol choice); `Ok(None)` when there is
    /// none (a singleton). Call it once per process: the inherited descriptor is taken over
    /// (and marked close-on-exec), so a second call fails with
    /// [`PmiError::AlreadyConnected`].
    pub fn from_env() -> Result<Option<Client>, PmiError> {
        let Some(settings) = env::read(|name| std::env::var(name).ok())? else {
            return Ok(None);
        };
        if TAKEN.swap(true, Ordering::SeqCst) {
            return Err(PmiError::AlreadyConnected);
        }
        Client::connect(settings).map(Some)
    }

    /// Connects as `settings` say (from [`env::read`] with a map of your own, for tests and
    /// for programs that hold their PMI settings elsewhere). With [`Endpoint::Fd`] the caller
    /// guarantees that the descriptor is this client's alone.
    pub fn connect(settings: Settings) -> Result<Client, PmiError> {
        let conn = match &settings.endpoint {
            Endpoint::Fd(fd) => Connection::inherit(*fd)?,
            Endpoint::Port { address, .. } => Connection::connect(address, settings.request.limit)?,
        };
        let mut client = Client {
            conn,
            version: settings.version,
            rank: settings.rank.unwrap_or(0),
            size: settings.size.unwrap_or(1),
            kvs_name: String::new(),
            server_key_max: PMI2_MAX_KEYLEN,
            server_value_max: PMI2_MAX_VALLEN,
            request: settings.request,
            fence: settings.fence,
        };
        match settings.version {
            Version::V1 => client.init_v1(&settings)?,
            Version::V2 => client.init_v2(&settings)?,
        }
        tracing::debug!(target: "pmi", client = ?client, "connected to the process manager");
        Ok(client)
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The wire protocol in use.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The job's key-value space (PMI-1 kvsname, PMI-2 job id).
    pub fn kvs_name(&self) -> &str {
        &self.kvs_name
    }

    /// The longest key [`put`](Self::put) accepts (the server's limit less the rank prefix
    /// the client adds).
    pub fn max_key_len(&self) -> usize {
        value::usable_key_len(self.server_key_max, self.size)
    }

    /// The longest *encoded* value [`put`](Self::put) accepts: plain characters count one,
    /// the others three (`%XX`, see [`crate::value`]).
    pub fn max_value_len(&self) -> usize {
        self.server_value_max.saturating_sub(1)
    }

    /// Stores `value` under `key` for this rank; other ranks see it after the next
    /// [`fence`](Self::fence). Keys are 1 or more of `A-Z a-z 0-9 _ - .`; values are any
    /// non-empty string (percent-encoded on the wire, see [`crate::value`]) whose encoding
    /// fits [`max_value_len`](Self::max_value_len). Putting a key again replaces it.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.check_key(key)?;
        if value.is_empty() {
            return Err(PmiError::InvalidValue {
                key: key.into(),
                problem: "empty values cannot cross every PMI wire; put a marker instead".into(),
            });
        }
        let wire_value = value::encode(value);
        if wire_value.len() > self.max_value_len() {
            return Err(PmiError::InvalidValue {
                key: key.into(),
                problem: format!(
                    "{} bytes once encoded, more than the {} the process manager accepts",
                    wire_value.len(),
                    self.max_value_len()
                ),
            });
        }
        let stored = value::qualified_key(self.rank, key);
        match self.version {
            Version::V1 => {
                let request = Message::new("put")
                    .with("kvsname", &self.kvs_name)
                    .with("key", stored)
                    .with("value", wire_value);
                let reply = self.request_v1("put", &request, "put_result", self.request)?;
                check_rc("put", &reply)
            }
            Version::V2 => {
                let request = Message::new("kvs-put")
                    .with("key", stored)
                    .with("value", wire_value);
                let reply =
                    self.request_v2("kvs-put", &request, "kvs-put-response", self.request)?;
                check_rc("kvs-put", &reply)
            }
        }
    }

    /// Makes every rank's puts so far visible to all, and waits for all ranks to call it
    /// (PMI-1: `barrier_in`/`barrier_out`, which commits puts; PMI-2: `kvs-fence`).
    pub fn fence(&mut self) -> Result<(), PmiError> {
        match self.version {
            Version::V1 => self.barrier_v1(),
            Version::V2 => self.fence_v2(),
        }
    }

    /// Returns what rank `rank_of_putter` put under `key` before the last fence.
    /// [`PmiError::NotFound`] if it put nothing there (or has not fenced since).
    pub fn get(&mut self, rank_of_putter: usize, key: &str) -> Result<String, PmiError> {
        if rank_of_putter >= self.size {
            return Err(PmiError::NoSuchRank {
                command: "get",
                rank: rank_of_putter,
                size: self.size,
            });
        }
        self.check_key(key)?;
        let stored = value::qualified_key(rank_of_putter, key);
        let not_found = |message: &str| PmiError::NotFound {
            rank: rank_of_putter,
            key: key.to_string(),
            message: message.to_string(),
        };
        let (command, reply) = match self.version {
            Version::V1 => {
                let request = Message::new("get")
                    .with("kvsname", &self.kvs_name)
                    .with("key", stored);
                let reply = self.request_v1("get", &request, "get_result", self.request)?;
                ("get", reply)
            }
            Version::V2 => {
                let request = Message::new("kvs-get")
                    .with("jobid", &self.kvs_name)
                    .with("srcid", rank_of_putter)
                    .with("key", stored);
                let reply =
                    self.request_v2("kvs-get", &request, "kvs-get-response", self.request)?;
                ("kvs-get", reply)
            }
        };
        if rc_of(command, &reply)? != 0 {
            return Err(not_found(&server_message(&reply)));
        }
        if reply
            .get("found")
            .is_some_and(|f| !f.eq_ignore_ascii_case("TRUE"))
        {
            return Err(not_found(&server_message(&reply)));
        }
        let wire_value = reply.get("value").ok_or_else(|| PmiError::Malformed {
            command,
            problem: "no value= in a successful reply".into(),
            reply: describe(&reply),
        })?;
        value::decode(wire_value).map_err(|problem| PmiError::Malformed {
            command,
            problem: format!("the value is not one this client put ({problem})"),
            reply: describe(&reply),
        })
    }

    /// Waits until every rank has called `barrier` (PMI-2 has no barrier of its own: a
    /// `kvs-fence`).
    pub fn barrier(&mut self) -> Result<(), PmiError> {
        self.fence()
    }

    /// Asks the process manager to end the whole job with exit status `code`, reporting
    /// `message` (newlines become spaces, and under PMI-2 `;` becomes `,`). There is no reply:
    /// the caller exits next (with `code`).
    pub fn abort(&mut self, code: i32, message: &str) -> Result<(), PmiError> {
        let text: String = message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let text = text.trim();
        let deadline = Deadline::start(self.request);
        match self.version {
            Version::V1 => {
                let mut request = Message::new("abort").with("exitcode", code);
                if !text.is_empty() {
                    request = request.with("message", text);
                }
                self.conn
                    .send(request.to_v1_line().as_bytes(), "abort", deadline)
            }
            Version::V2 => {
                let mut request = Message::new("abort")
                    .with("isworld", "TRUE")
                    .with("exitcode", code);
                if !text.is_empty() {
                    request = request.with("message", text.replace(';', ","));
                }
                let frame = frame(&request, "abort")?;
                self.conn.send(&frame, "abort", deadline)
            }
        }
    }

    /// Tells the process manager this rank is done with PMI, and closes the connection.
    pub fn finalize(mut self) -> Result<(), PmiError> {
        let reply = match self.version {
            Version::V1 => {
                let request = Message::new("finalize");
                self.request_v1("finalize", &request, "finalize_ack", self.request)?
            }
            Version::V2 => {
                let request = Message::new("finalize");
                self.request_v2("finalize", &request, "finalize-response", self.request)?
            }
        };
        check_rc("finalize", &reply)
    }

    /// The process manager's `PMI_process_mapping` (which ranks share a node, see
    /// [`crate::mapping`]), if it publishes one: a reserved key under PMI-1, a job attribute
    /// under PMI-2.
    pub fn process_mapping(&mut self) -> Result<Option<String>, PmiError> {
        let reply = match self.version {
            Version::V1 => {
                let request = Message::new("get")
                    .with("kvsname", &self.kvs_name)
                    .with("key", PROCESS_MAPPING);
                let reply = self.request_v1("get", &request, "get_result", self.request)?;
                if rc_of("get", &reply)? != 0 {
                    return Ok(None);
                }
                reply
            }
            Version::V2 => {
                let request = Message::new("info-getjobattr").with("key", PROCESS_MAPPING);
                let reply = self.request_v2(
                    "info-getjobattr",
                    &request,
                    "info-getjobattr-response",
                    self.request,
                )?;
                check_rc("info-getjobattr", &reply)?;
                reply
            }
        };
        let found = reply
            .get("found")
            .is_none_or(|f| f.eq_ignore_ascii_case("TRUE"));
        Ok(reply
            .get("value")
            .filter(|v| found && !v.is_empty())
            .map(str::to_string))
    }

    /// Reads `key` of this job's key-value space as the process manager stored it (no rank
    /// prefix): the keys a spawning parent pre-put (`PARENT_ROOT_PORT_NAME`). `Ok(None)` if it
    /// is not there. PMI-1 only (PMI-2 has no such keys: `None`).
    pub fn get_preput(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        if self.version != Version::V1 {
            return Ok(None);
        }
        let request = Message::new("get")
            .with("kvsname", &self.kvs_name)
            .with("key", key);
        let reply = self.request_v1("get", &request, "get_result", self.request)?;
        if rc_of("get", &reply)? != 0 {
            return Ok(None);
        }
        Ok(reply.get("value").map(str::to_string))
    }

    /// `get_appnum` (PMI-1): which command of an MPMD or `spawn_multiple` start this process
    /// runs; 0 under PMI-2.
    pub fn appnum(&mut self) -> Result<i32, PmiError> {
        if self.version != Version::V1 {
            return Ok(0);
        }
        let reply = self.request_v1(
            "get_appnum",
            &Message::new("get_appnum"),
            "appnum",
            self.request,
        )?;
        check_rc("get_appnum", &reply)?;
        Ok(number_field("get_appnum", &reply, "appnum")? as i32)
    }

    /// `get_universe_size` (PMI-1): how many processes the process manager can run; the
    /// job's size under PMI-2.
    pub fn universe_size(&mut self) -> Result<usize, PmiError> {
        if self.version != Version::V1 {
            return Ok(self.size);
        }
        let reply = self.request_v1(
            "get_universe_size",
            &Message::new("get_universe_size"),
            "universe_size",
            self.request,
        )?;
        check_rc("get_universe_size", &reply)?;
        number_field("get_universe_size", &reply, "size")
    }

    /// Asks the process manager to start a new job of `commands` (PMI-1 `mcmd=spawn`, one
    /// block per command, as MPICH's `PMI_Spawn_multiple` sends them), with `preput` stored in
    /// the new job's key-value space. Returns once the process manager answers (it has started
    /// the job, or refused with its reason).
    pub fn spawn(
        &mut self,
        commands: &[crate::SpawnCommand],
        preput: &[(String, String)],
    ) -> Result<(), PmiError> {
        if self.version != Version::V1 {
            return Err(PmiError::Refused {
                command: "spawn",
                rc: -1,
                message: "spawning needs PMI-1 (MPI_PMI_VERSION=1)".into(),
            });
        }
        let one_line = |s: &str| s.replace(['\n', '\r'], " ");
        let total = commands.len();
        for (i, c) in commands.iter().enumerate() {
            let mut block = format!(
                "mcmd=spawn\nnprocs={}\nexecname={}\ntotspawns={total}\nspawnssofar={}\nargcnt={}\n",
                c.nprocs,
                one_line(&c.command),
                i + 1,
                c.args.len()
            );
            for (j, a) in c.args.iter().enumerate() {
                block += &format!("arg{}={}\n", j + 1, one_line(a));
            }
            block += &format!("preput_num={}\n", preput.len());
            for (j, (k, v)) in preput.iter().enumerate() {
                block += &format!("preput_key_{j}={k}\npreput_val_{j}={}\n", one_line(v));
            }
            block += &format!("info_num={}\n", c.info.len());
            for (j, (k, v)) in c.info.iter().enumerate() {
                block += &format!("info_key_{j}={k}\ninfo_val_{j}={}\n", one_line(v));
            }
            block += "endcmd\n";
            self.conn
                .send(block.as_bytes(), "spawn", Deadline::start(self.request))?;
        }
        let line = self.conn.read_line("spawn", Deadline::start(self.fence))?;
        let reply = parse_v1("spawn", &line)?;
        expect_cmd("spawn", &reply, "spawn_result", &line)?;
        check_rc("spawn", &reply)
    }

    fn check_key(&self, key: &str) -> Result<(), PmiError> {
        value::check_key(key).map_err(|problem| PmiError::InvalidKey {
            key: key.into(),
            problem,
        })?;
        if key.len() > self.max_key_len() {
            return Err(PmiError::InvalidKey {
                key: key.into(),
                problem: format!(
                    "{} characters, more than the {} this job's process manager leaves",
                    key.len(),
                    self.max_key_len()
                ),
            });
        }
        Ok(())
    }

    // ---- PMI-1 ----

    fn init_v1(&mut self, settings: &Settings) -> Result<(), PmiError> {
        if let Endpoint::Port { id, key, .. } = &settings.endpoint {
            self.initack(*id, key.as_deref())?;
        } else {
            self.rank = required(settings.rank, env::RANK)?;
            self.size = required(settings.size, env::SIZE)?;
        }
        let request = Message::new("init")
            .with("pmi_version", 1)
            .with("pmi_subversion", 1);
        let reply = self.request_v1("init", &request, "response_to_init", self.request)?;
        check_rc("init", &reply)?;
        if let Some(version) = reply.get("pmi_version") {
            if version.trim() != "1" {
                return Err(PmiError::Malformed {
                    command: "init",
                    problem: format!("the process manager offers PMI version {version}, not 1"),
                    reply: describe(&reply),
                });
            }
        }
        let reply = self.request_v1(
            "get_maxes",
            &Message::new("get_maxes"),
            "maxes",
            self.request,
        )?;
        check_rc("get_maxes", &reply)?;
        self.server_key_max = number_field("get_maxes", &reply, "keylen_max")?;
        self.server_value_max = number_field("get_maxes", &reply, "vallen_max")?;
        let reply = self.request_v1(
            "get_my_kvsname",
            &Message::new("get_my_kvsname"),
            "my_kvsname",
            self.request,
        )?;
        check_rc("get_my_kvsname", &reply)?;
        self.kvs_name = text_field("get_my_kvsname", &reply, "kvsname")?;
        self.check_rank()
    }

    /// The TCP handshake: present the id (and job key), learn size and rank.
    fn initack(&mut self, id: usize, key: Option<&str>) -> Result<(), PmiError> {
        let mut request = Message::new("initack").with("pmiid", id);
        if let Some(key) = key {
            request = request.with("jobkey", key);
        }
        let reply = self.request_v1("initack", &request, "initack", self.request)?;
        check_rc("initack", &reply)?;
        let deadline = Deadline::start(self.request);
        let (mut rank, mut size) = (None, None);
        // The server follows with `cmd=set size=`, `cmd=set rank=`, `cmd=set debug=`.
        for _ in 0..3 {
            let line = self.conn.read_line("initack", deadline)?;
            let set = parse_v1("initack", &line)?;
            if set.cmd != "set" {
                return Err(PmiError::Malformed {
                    command: "initack",
                    problem: "expected cmd=set lines after cmd=initack".into(),
                    reply: line,
                });
            }
            if set.get("size").is_some() {
                size = Some(number_field("initack", &set, "size")?);
            }
            if set.get("rank").is_some() {
                rank = Some(number_field("initack", &set, "rank")?);
            }
        }
        let missing = |what: &str| PmiError::Malformed {
            command: "initack",
            problem: format!("the process manager did not say the {what}"),
            reply: String::new(),
        };
        self.rank = rank.ok_or_else(|| missing("rank"))?;
        self.size = size.ok_or_else(|| missing("size"))?;
        Ok(())
    }

    fn barrier_v1(&mut self) -> Result<(), PmiError> {
        let reply = self.request_v1(
            "barrier",
            &Message::new("barrier_in"),
            "barrier_out",
            self.fence,
        )?;
        check_rc("barrier", &reply)
    }

    /// Sends `request` as a PMI-1 line and reads the reply line, which must be `expect`.
    fn request_v1(
        &mut self,
        command: &'static str,
        request: &Message,
        expect: &str,
        patience: Patience,
    ) -> Result<Message, PmiError> {
        let send_by = Deadline::start(self.request);
        self.conn
            .send(request.to_v1_line().as_bytes(), command, send_by)?;
        let line = self.conn.read_line(command, Deadline::start(patience))?;
        let reply = parse_v1(command, &line)?;
        expect_cmd(command, &reply, expect, &line)?;
        Ok(reply)
    }

    // ---- PMI-2 ----

    fn init_v2(&mut self, settings: &Settings) -> Result<(), PmiError> {
        // The first exchange is a PMI-1 line in which the client asks for version 2.
        let request = Message::new("init")
            .with("pmi_version", 2)
            .with("pmi_subversion", 0);
        let reply = self.request_v1("init", &request, "response_to_init", self.request)?;
        let offered = reply.get("pmi_version").unwrap_or("").trim().to_string();
        if rc_of("init", &reply)? != 0 || offered != "2" {
            return Err(PmiError::Refused {
                command: "init",
                rc: rc_of("init", &reply)?,
                message: format!(
                    "the process manager does not speak PMI-2 (it offers version {offered:?}); \
                     unset {} or set it to 1",
                    env::VERSION
                ),
            });
        }
        let id = match &settings.endpoint {
            Endpoint::Port { id, .. } => Some(*id),
            Endpoint::Fd(_) => settings.rank,
        };
        let mut request = Message::new("fullinit");
        if let Some(jobid) = &settings.jobid {
            request = request.with("pmijobid", jobid);
        }
        let request = request
            .with("pmirank", id.map_or(-1, |id| id as i64))
            .with("threaded", "FALSE");
        let reply = self.request_v2("fullinit", &request, "fullinit-response", self.request)?;
        check_rc("fullinit", &reply)?;
        self.rank = match reply.get("rank") {
            Some(_) => number_field("fullinit", &reply, "rank")?,
            None => required(settings.rank, env::RANK)?,
        };
        self.size = match reply.get("size") {
            Some(_) => number_field("fullinit", &reply, "size")?,
            None => required(settings.size, env::SIZE)?,
        };
        let reply = self.request_v2(
            "job-getid",
            &Message::new("job-getid"),
            "job-getid-response",
            self.request,
        )?;
        check_rc("job-getid", &reply)?;
        self.kvs_name = text_field("job-getid", &reply, "jobid")?;
        self.check_rank()
    }

    fn fence_v2(&mut self) -> Result<(), PmiError> {
        let reply = self.request_v2(
            "kvs-fence",
            &Message::new("kvs-fence"),
            "kvs-fence-response",
            self.fence,
        )?;
        check_rc("kvs-fence", &reply)
    }

    /// Sends `request` as a PMI-2 frame and reads the reply frame, which must be `expect`.
    fn request_v2(
        &mut self,
        command: &'static str,
        request: &Message,
        expect: &str,
        patience: Patience,
    ) -> Result<Message, PmiError> {
        let bytes = frame(request, command)?;
        self.conn
            .send(&bytes, command, Deadline::start(self.request))?;
        let deadline = Deadline::start(patience);
        let prefix = self
            .conn
            .read_exact(wire::FRAME_LENGTH_DIGITS, command, deadline)?;
        let length = wire::parse_frame_length(&prefix).map_err(|problem| PmiError::Malformed {
            command,
            problem,
            reply: String::from_utf8_lossy(&prefix).into_owned(),
        })?;
        // The body may take as long as the reply's start could (a fence answers late).
        let body = self
            .conn
            .read_exact(length, command, Deadline::start(self.request))?;
        let body = String::from_utf8(body).map_err(|e| PmiError::Malformed {
            command,
            problem: "a reply that is not UTF-8 text".into(),
            reply: String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })?;
        let reply = Message::parse_v2(&body).map_err(|problem| PmiError::Malformed {
            command,
            problem,
            reply: body.clone(),
        })?;
        expect_cmd(command, &reply, expect, &body)?;
        Ok(reply)
    }

    fn check_rank(&self) -> Result<(), PmiError> {
        if self.size == 0 || self.rank >= self.size {
            return Err(PmiError::Malformed {
                command: "init",
                problem: format!("rank {} is not in a job of {} ranks", self.rank, self.size),
                reply: String::new(),
            });
        }
        Ok(())
    }
}

fn frame(request: &Message, command: &'static str) -> Result<Vec<u8>, PmiError> {
    request.to_v2_frame().ok_or_else(|| PmiError::InvalidValue {
        key: command.to_string(),
        problem: format!(
            "the request is longer than a PMI-2 frame can be ({} bytes)",
            wire::MAX_FRAME_BODY
        ),
    })
}

fn parse_v1(command: &'static str, line: &str) -> Result<Message, PmiError> {
    Message::parse_v1(line).map_err(|problem| PmiError::Malformed {
        command,
        problem,
        reply: line.to_string(),
    })
}

fn expect_cmd(
    command: &'static str,
    reply: &Message,
    expect: &str,
    raw: &str,
) -> Result<(), PmiError> {
    if reply.cmd == expect {
        Ok(())
    } else {
        Err(PmiError::Malformed {
            command,
            problem: format!("expected cmd={expect}, got cmd={}", reply.cmd),
            reply: raw.to_string(),
        })
    }
}

/// The reply's `rc` (0 when absent, as PMI-1 allows).
fn rc_of(command: &'static str, reply: &Message) -> Result<i64, PmiError> {
    match reply.get("rc") {
        None => Ok(0),
        Some(rc) => rc.trim().parse().map_err(|_| PmiError::Malformed {
            command,
            problem: format!("rc={rc:?} is not a number"),
            reply: describe(reply),
        }),
    }
}

fn check_rc(command: &'static str, reply: &Message) -> Result<(), PmiError> {
    match rc_of(command, reply)? {
        0 => Ok(()),
        rc => Err(PmiError::Refused {
            command,
            rc,
            message: server_message(reply),
        }),
    }
}

/// What the server said about a failure (`msg` in PMI-1, `errmsg` in PMI-2).
fn server_message(reply: &Message) -> String {
    reply
        .get("msg")
        .or_else(|| reply.get("errmsg"))
        .unwrap_or("")
        .to_string()
}

fn number_field(command: &'static str, reply: &Message, key: &str) -> Result<usize, PmiError> {
    let value = reply.get(key).ok_or_else(|| PmiError::Malformed {
        command,
        problem: format!("no {key}= field"),
        reply: describe(reply),
    })?;
    value.trim().parse().map_err(|_| PmiError::Malformed {
        command,
        problem: format!("{key}={value:?} is not a number"),
        reply: describe(reply),
    })
}

fn text_field(command: &'static str, reply: &Message, key: &str) -> Result<String, PmiError> {
    match reply.get(key) {
        Some(value) if !value.is_empty() => Ok(value.to_string()),
        _ => Err(PmiError::Malformed {
            command,
            problem: format!("no {key}= field"),
            reply: describe(reply),
        }),
    }
}

fn required(value: Option<usize>, name: &str) -> Result<usize, PmiError> {
    value.ok_or_else(|| {
        PmiError::Environment(format!(
            "{name} is not set; the process manager sets it with PMI_FD"
        ))
    })
}

/// A reply as text, for messages.
fn describe(reply: &Message) -> String {
    reply.to_v1_line().trim_end().to_string()
}
