//! The progress engine: the one place where a process waits, and the one function that moves
//! everything on (MPICH's `MPID_Progress_wait`/`test`, Open MPI's `opal_progress`).
//!
//! ```text
//!   every blocking MPI call, every Test/Wait ──▶ Engine::block_on / Engine::test
//!                                                   │ one turn = Engine::progress:
//!                                                   ├─ Adi::progress: the channel polls the
//!                                                   │   devices once, arrivals are matched,
//!                                                   │   rendezvous reads start and end, sends go
//!                                                   ├─ every Operation in flight (nonblocking
//!                                                   │   collectives, ...) moves on; those done
//!                                                   │   complete their requests
//!                                                   └─ every registered Hook (windows, files,
//!                                                       generalized requests, sockets, ...)
//!                                                  nothing happened: back off (spin, yield,
//!                                                  nap) and now and then check the peers
//! ```
//!
//! Because a rank blocked anywhere turns the same crank, it always moves all of its
//! operations on: a rank blocked in `MPI_Recv`, or looping on `MPI_Test` of one request,
//! still forwards its share of a nonblocking collective the others wait for (MPI 3.1 §3.5,
//! §5.12). The waiting policy (spin briefly, then yield, then nap when ranks outnumber cores;
//! peers checked every 100 ms) lives here once. Under `MPI_THREAD_MULTIPLE` the layer above
//! lets one thread at a time in, or splits the engine into lanes ([`Engine::into_lanes`],
//! [`crate::lanes`]) that one thread each may turn at the same time.
//!
//! Layers above plug in two ways: an [`Operation`] is one request's worth of work, started
//! with [`Engine::start`] and polled until it completes its request; a [`Hook`] is a subsystem
//! with work of its own (a one-sided window's passive target, a file's aggregator), registered
//! once with [`Engine::register`] and polled on every turn.

use crate::adi::{Adi, AdiError, DirectState, ReqId, Result, SendMode, Standing, Status};
use nic_model::wait::Backoff;
use std::any::Any;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// One request's worth of work that the engine advances on every turn, or on every turn
/// after something arrived or left if it says it moves only then (a nonblocking
/// collective's schedule). It may start and test point-to-point operations, and must never
/// wait.
pub trait Operation {
    /// Moves the operation on as far as it goes without waiting; `Some(status)` once it is
    /// over (its request then completes with that status).
    fn poll(&mut self, p2p: &mut Adi) -> Result<Option<Status>>;

    /// Whether the operation moves only when one of the point-to-point requests it started
    /// completes (a schedule of transfers): the engine then polls it on the turns after
    /// [`Adi::events`] changed, not on every turn (a blocked wait turns the crank thousands of
    /// times between two arrivals). Its first poll, at its start, runs whatever it can do at
    /// once; requests it starts that complete at once are its own poll's to see.
    fn moves_on_events(&self) -> bool {
        false
    }
}

/// An operation whose state its owner keeps between runs (a persistent collective's): the
/// engine holds another reference to it while a run is in flight
/// ([`Engine::start_persistent_shared`]), so a run costs no allocation.
pub trait SharedOperation {
    /// As [`Operation::poll`], through a shared reference (the state has its own cell).
    fn poll_shared(&self, p2p: &mut Adi) -> Result<Option<Status>>;

    /// As [`Operation::moves_on_events`].
    fn moves_on_events(&self) -> bool {
        false
    }
}

/// An operation in flight, as the engine holds it.
enum Held {
    Owned(Box<dyn Operation>),
    Shared(Rc<dyn SharedOperation>),
}

impl Held {
    fn moves_on_events(&self) -> bool {
        match self {
            Held::Owned(op) => op.moves_on_events(),
            Held::Shared(op) => op.moves_on_events(),
        }
    }

    #[inline]
    fn poll(&mut self, p2p: &mut Adi) -> Result<Option<Status>> {
        match self {
            Held::Owned(op) => op.poll(p2p),
            Held::Shared(op) => op.poll_shared(p2p),
        }
    }
}

/// A subsystem with work of its own, polled on every turn of the engine.
pub trait Hook: Any {
    /// Moves the subsystem on without waiting; `true` if anything happened.
    fn progress(&mut self, p2p: &mut Adi) -> Result<bool>;
    /// Whether the subsystem still has work that finalize must wait for.
    fn busy(&self) -> bool {
        false
    }
    /// For its owner to reach its state ([`Engine::hook_mut`]).
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// The name of a registered hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookId(usize);

/// Idle `test` calls between two looks at the clock (for the peers' liveness).
const TESTS_PER_CLOCK: u32 = 256;
/// How often a program polling with `test` learns of a dead peer.
const LIVENESS_EVERY: Duration = Duration::from_millis(100);

/// The engine: the point-to-point engine, the operations in flight, the hooks.
pub struct Engine {
    adi: Adi,
    /// Operations in flight: request, operation, whether it moves only on events.
    ops: Vec<Option<(ReqId, Held, bool)>>,
    /// [`Adi::events`] when the operations were last polled.
    ops_seen: u64,
    live_ops: usize,
    hooks: Vec<Box<dyn Hook>>,
    idle_tests: u32,
    next_liveness_check: Instant,
}

// SAFETY: an engine is used through `&mut Engine` only, so moving it to another thread
// moves everything it holds with it, and one thread at a time uses it. What is not `Send`
// inside: raw pointers to the buffers of requests in flight (valid for any thread until the
// requests complete: the contracts of `isend`, `irecv` and the channel's transfers), a lane's
// channel (whose shared part is used under its mutex: `crate::lanes`), and what the layer
// above plugs in (operations, hooks, attachments). Of those, only a persistent operation's
// state ([`Engine::start_persistent_shared`]) is shared with anything outside the engine: the
// layer above keeps the other references and must use them only from the thread that uses
// the engine at the time (the MPI library does: both live in its state, under its lock).
unsafe impl Send for Engine {}

impl Engine {
    /// Starts MPI's engine over the channel `MPI_CHANNEL` names ([`Adi::init`]).
    pub fn init() -> Result<Engine> {
        Ok(Engine::new(Adi::init()?))
    }

    /// Splits this engine into `n` lanes ([`crate::lanes`]) that progress in parallel, one
    /// thread each at a time: element 0 is this engine, which keeps everything it had (its
    /// requests, operations, hooks, the channel's device memory and counters); elements
    /// `1..n` are new engines. From now on a message on context `ctx` with tag `tag` is
    /// matched by lane `route(ctx, tag) % n`, in this process and, with the same `route`, in
    /// every other ([`crate::lanes::pair_route`] is MPI's): post each operation on its lane.
    ///
    /// `n == 1` changes nothing. Made right after start-up, before any traffic on the
    /// contexts that go to other lanes: refused while a send or receive on such a context is
    /// live here (the engine is dropped with the error: [`Engine::split_lanes`] keeps it);
    /// messages for them already received move to their lane. Finalize every lane, in any
    /// order; the last one finalizes the channel.
    pub fn into_lanes(mut self, n: usize, route: crate::lanes::Route) -> Result<Vec<Engine>> {
        let others = self.split_lanes(n, route)?;
        let mut lanes = Vec::with_capacity(n);
        lanes.push(self);
        lanes.extend(others);
        Ok(lanes)
    }

    /// As [`Engine::into_lanes`], with this engine staying where it is as lane 0: returns
    /// lanes `1..n` (none for `n == 1`). When it is refused, nothing has changed.
    pub fn split_lanes(&mut self, n: usize, route: crate::lanes::Route) -> Result<Vec<Engine>> {
        if n == 1 {
            return Ok(Vec::new());
        }
        let others = crate::lanes::split(&mut self.adi, n, route)?;
        Ok(others.into_iter().map(Engine::new).collect())
    }

    pub fn new(adi: Adi) -> Engine {
        Engine {
            adi,
            ops: Vec::new(),
            ops_seen: 0,
            live_ops: 0,
            hooks: Vec::new(),
            idle_tests: 0,
            next_liveness_check: Instant::now(),
        }
    }

    /// The point-to-point engine, for starting operations (never for waiting).
    #[inline(always)]
    pub fn p2p(&mut self) -> &mut Adi {
        &mut self.adi
    }

    #[inline(always)]
    pub fn p2p_ref(&self) -> &Adi {
        &self.adi
    }

    /// One turn: polls the devices once (through the channel), matches, advances every
    /// operation in flight and every hook. `true` if anything happened.
    #[inline]
    pub fn progress(&mut self) -> Result<bool> {
        let mut any = self.adi.progress()?;
        if self.live_ops > 0 {
            any |= self.poll_ops()?;
        }
        if !self.hooks.is_empty() {
            any |= self.poll_hooks()?;
        }
        Ok(any)
    }

    #[inline(never)]
    fn poll_ops(&mut self) -> Result<bool> {
        let mut any = false;
        let events = self.adi.events();
        let fresh = events != self.ops_seen;
        self.ops_seen = events;
        for slot in self.ops.iter_mut() {
            let Some((id, op, on_events)) = slot else {
                continue;
            };
            if *on_events && !fresh {
                continue;
            }
            if let Some(status) = op.poll(&mut self.adi)? {
                self.adi.complete_external(*id, status);
                *slot = None;
                self.live_ops -= 1;
                any = true;
            }
        }
        Ok(any)
    }

    #[inline(never)]
    fn poll_hooks(&mut self) -> Result<bool> {
        let mut any = false;
        for h in self.hooks.iter_mut() {
            any |= h.progress(&mut self.adi)?;
        }
        Ok(any)
    }

    /// Starts `op` under a new request for the layer above's `owner`; its first steps run now.
    pub fn start(&mut self, mut op: Box<dyn Operation>, owner: u32) -> Result<ReqId> {
        let id = self.adi.external(owner)?;
        match op.poll(&mut self.adi) {
            Ok(Some(status)) => self.adi.complete_external(id, status),
            Ok(None) => self.keep(id, Held::Owned(op)),
            Err(e) => {
                let _ = self.adi.take(id);
                return Err(e);
            }
        }
        Ok(id)
    }

    /// Starts `op` as the next run of inactive persistent request `id` (a persistent
    /// collective, a partitioned request's round); its first steps run now, and the request
    /// completes when `op` is over, then becomes inactive again when retired.
    pub fn start_persistent(&mut self, id: ReqId, op: Box<dyn Operation>) -> Result<()> {
        self.start_persistent_held(id, Held::Owned(op))
    }

    /// As [`Engine::start_persistent`], for an operation whose state its owner keeps: the
    /// engine holds `op` (another reference) until the run is over, then drops it.
    pub fn start_persistent_shared(
        &mut self,
        id: ReqId,
        op: Rc<dyn SharedOperation>,
    ) -> Result<()> {
        self.start_persistent_held(id, Held::Shared(op))
    }

    fn start_persistent_held(&mut self, id: ReqId, mut op: Held) -> Result<()> {
        self.adi.start_persistent_external(id)?;
        match op.poll(&mut self.adi) {
            Ok(Some(status)) => self.adi.complete_external(id, status),
            Ok(None) => self.keep(id, op),
            Err(e) => {
                // Back to inactive: the run ends here with the engine's error.
                self.adi.complete_external(id, Status::default());
                let _ = self.adi.take(id);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Keeps `op`, which completes request `id`, among the operations every turn advances.
    fn keep(&mut self, id: ReqId, op: Held) {
        let slot = self
            .ops
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                self.ops.push(None);
                self.ops.len() - 1
            });
        let on_events = op.moves_on_events();
        self.ops[slot] = Some((id, op, on_events));
        self.live_ops += 1;
    }

    /// Registers a subsystem's hook; it is polled on every turn from now on.
    pub fn register(&mut self, hook: Box<dyn Hook>) -> HookId {
        self.hooks.push(hook);
        HookId(self.hooks.len() - 1)
    }

    /// The state of a registered hook.
    pub fn hook_mut<T: Hook>(&mut self, id: HookId) -> Option<&mut T> {
        self.hooks.get_mut(id.0)?.as_any_mut().downcast_mut::<T>()
    }

    /// The state of a registered hook together with the point-to-point engine, for a
    /// subsystem's call that starts operations from its state (a one-sided operation).
    pub fn hook_with_p2p<T: Hook>(&mut self, id: HookId) -> Option<(&mut T, &mut Adi)> {
        let hook = self.hooks.get_mut(id.0)?.as_any_mut().downcast_mut::<T>()?;
        Some((hook, &mut self.adi))
    }

    /// Operations in flight.
    pub fn operations_in_flight(&self) -> usize {
        self.live_ops
    }

    /// The one waiting loop: turns the crank until `done` has an answer, backing off while
    /// nothing happens and failing (instead of hanging) if a peer dies.
    /// Errors of `done` are the caller's type, which an engine error converts into.
    #[inline]
    pub fn block_on<T, E: From<AdiError>>(
        &mut self,
        mut done: impl FnMut(&mut Engine) -> std::result::Result<Option<T>, E>,
    ) -> std::result::Result<T, E> {
        // This wait keeps the lock, so no copy of its turns may wait for a job to run after
        // it (a wait reached inside a look of a thread that defers copies).
        let _inline = nic_model::copy_jobs::Deferring::off();
        if let Some(t) = done(self)? {
            return Ok(t);
        }
        let mut backoff = Backoff::new();
        loop {
            self.turn(&mut backoff)?;
            if let Some(t) = done(self)? {
                return Ok(t);
            }
        }
    }

    /// One turn of a wait: progress, or back off (and now and then check the peers).
    #[inline]
    fn turn(&mut self, backoff: &mut Backoff) -> Result<()> {
        if self.progress()? {
            backoff.reset();
        } else if backoff.snooze() {
            self.adi.check_peers()?;
        }
        Ok(())
    }

    /// Retires `id` if it is complete; otherwise turns the crank once and looks again
    /// (`MPI_Test`). A program that polls this way learns of a dead peer as one that waits
    /// does (the peers are checked at most every 100 ms).
    #[inline]
    pub fn test(&mut self, id: ReqId) -> Result<Option<Status>> {
        if let Some(s) = self.adi.take(id)? {
            return Ok(Some(s));
        }
        self.poke()?;
        self.adi.take(id)
    }

    /// Turns the crank once (for `Testall`, `Testany`, `Testsome`, `Iprobe`); checks the
    /// peers now and then when nothing happens.
    #[inline]
    pub fn poke(&mut self) -> Result<bool> {
        let any = self.progress()?;
        if !any {
            self.idle_check()?;
        }
        Ok(any)
    }

    #[inline]
    fn idle_check(&mut self) -> Result<()> {
        self.idle_tests = self.idle_tests.wrapping_add(1);
        if !self.idle_tests.is_multiple_of(TESTS_PER_CLOCK) {
            return Ok(());
        }
        let now = Instant::now();
        if now >= self.next_liveness_check {
            self.next_liveness_check = now + LIVENESS_EVERY;
            self.adi.check_peers()?;
        }
        Ok(())
    }

    /// Waits for `id` and retires it. An inactive persistent request is an error here: the
    /// caller answers those itself.
    #[inline]
    pub fn wait(&mut self, id: ReqId) -> Result<Status> {
        if self.adi.standing(id) == Some(Standing::Inactive) {
            return Err(AdiError::BadRequest(id));
        }
        self.block_on(|e| e.adi.take(id))
    }

    /// Waits until `id` is complete, without retiring it.
    pub fn wait_complete(&mut self, id: ReqId) -> Result<()> {
        self.block_on(|e| match e.adi.standing(id) {
            Some(Standing::Complete) => Ok(Some(())),
            Some(_) => Ok(None),
            None => Err(AdiError::BadRequest(id)),
        })
    }

    /// Blocking send of `buf` (returns when `buf` may be reused; a synchronous send returns
    /// once the receive has matched).
    #[inline]
    pub fn send(
        &mut self,
        buf: &[u8],
        dest: usize,
        tag: i32,
        ctx: u16,
        mode: SendMode,
    ) -> Result<()> {
        if self.adi.send_now(buf, dest, tag, ctx, mode)? {
            if self.live_ops > 0 {
                // Nothing waited, but a blocking call is a turn of the crank for the rest.
                self.progress()?;
            }
            return Ok(());
        }
        // SAFETY: `buf` outlives the request: we wait for it before returning.
        let r = unsafe {
            self.adi
                .isend(buf.as_ptr(), buf.len(), dest, tag, ctx, mode, 0)?
        };
        self.wait(r).map(drop)
    }

    /// Blocking receive into `buf` from `src` (a rank or `ANY_SOURCE`) with `tag` (or
    /// `ANY_TAG`). While nothing else is posted or unexpected, the message is matched straight
    /// from the channel's arrivals, with no request.
    #[inline]
    pub fn recv(&mut self, buf: &mut [u8], src: i32, tag: i32, ctx: u16) -> Result<Status> {
        if !self.adi.direct_possible() {
            return self.recv_posted(buf, src, tag, ctx);
        }
        // SAFETY: `buf` is borrowed until `direct_end`, below.
        unsafe {
            self.adi
                .direct_begin(buf.as_mut_ptr(), buf.len(), src, tag, ctx)?
        };
        let outcome: Result<DirectState> = self.block_on(|e| {
            Ok(match e.adi.direct_state() {
                DirectState::Waiting => None,
                other => Some(other),
            })
        });
        self.adi.direct_end();
        match outcome? {
            DirectState::Done(s) => Ok(s),
            DirectState::Became(id) => self.wait(id),
            DirectState::Abandon => self.recv_posted(buf, src, tag, ctx),
            DirectState::Waiting => unreachable!("block_on returns a decision"),
        }
    }

    fn recv_posted(&mut self, buf: &mut [u8], src: i32, tag: i32, ctx: u16) -> Result<Status> {
        // SAFETY: `buf` outlives the request: we wait for it before returning.
        let r = unsafe {
            self.adi
                .irecv(buf.as_mut_ptr(), buf.len(), src, tag, ctx, 0)?
        };
        self.wait(r)
    }

    /// `MPI_Probe`: waits until a matching message has arrived and describes it.
    pub fn probe(&mut self, src: i32, tag: i32, ctx: u16) -> Result<Status> {
        self.block_on(|e| e.adi.probe_arrived(src, tag, ctx))
    }

    /// `MPI_Iprobe`: a matching message that has arrived, looking again after one turn.
    pub fn iprobe(&mut self, src: i32, tag: i32, ctx: u16) -> Result<Option<Status>> {
        if let Some(s) = self.adi.probe_arrived(src, tag, ctx)? {
            return Ok(Some(s));
        }
        self.poke()?;
        self.adi.probe_arrived(src, tag, ctx)
    }

    /// Completes outstanding sends and the hooks' work, then leaves the job cleanly.
    pub fn finalize(mut self) -> Result<()> {
        self.block_on(|e| {
            Ok::<_, AdiError>((!e.adi.busy() && !e.hooks.iter().any(|h| h.busy())).then_some(()))
        })?;
        self.adi.finalize()
    }
}
