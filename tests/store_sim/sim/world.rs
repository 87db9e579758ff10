//! The simulated store and its scheduler. Every request an actor's object-store client sends
//! is one **step**: the actor's thread parks in the store until the scheduler picks it, then
//! applies its request to the store's objects at once (S3 is strongly consistent: each request
//! takes effect at one instant) and runs on to its next request. Only one actor runs at a
//! time, so a seed (which picks the actor, the fault and the time that passes at each step)
//! names one interleaving and reproduces it.
//!
//! Faults a step may carry: the request fails before it is applied; it is applied and its
//! answer is lost (the client sees an error); the actor crashes there (it unwinds, drops its
//! handles, and starts again). Time is virtual: the store stamps Last-Modified with the true
//! time, and each actor's clock is the true time plus its skew.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::list::{PaginatedListOptions, PaginatedListResult, PaginatedListStore};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult,
    Result,
};
use treelog::object_store::Clock;

/// The true time at which a world starts (ns since the Unix epoch).
pub const EPOCH_NS: i64 = 1_800_000_000_000_000_000;

/// What a crashed actor unwinds with.
pub struct Crash;

#[derive(Clone, Debug)]
pub struct Obj {
    pub bytes: Bytes,
    pub e_tag: String,
    pub modified_ns: i64,
}

/// A fault a step carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    FailBefore,
    LoseAnswer,
    Crash,
    /// A create answered 409 Conflict (a concurrent create of the key under way), nothing
    /// applied.
    Conflict,
}

/// Something a scripted schedule does when an actor's request matches, before it runs.
pub struct Hook {
    pub actor: usize,
    /// The request's text starts with this (`put KEY`, `get KEY`, `list PREFIX`, `delete KEY`).
    pub request: String,
    pub action: Box<dyn FnOnce() + Send>,
    /// The fault the request then carries.
    pub fault: Fault,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Running,
    Waiting,
    Done,
}

pub struct ActorSlot {
    pub name: String,
    pub status: Status,
    pub skew_ns: i64,
    /// What the actor asks for, while it waits.
    pub request: String,
    /// Faults its requests carried so far.
    pub faults: u64,
    /// When (true time) its waiting request was sent.
    pub sent_ns: i64,
}

pub struct State {
    pub objects: BTreeMap<String, Obj>,
    pub e_tags: u64,
    pub now_ns: i64,
    /// Whether requests wait for the scheduler (else each applies at once).
    pub scheduled: bool,
    pub actors: Vec<ActorSlot>,
    /// The actor allowed to run its request, and the fault it carries.
    pub granted: Option<(usize, Fault)>,
    /// Steps run, and the trace of (actor, request, fault) they ran.
    pub steps: u64,
    pub trace: Vec<String>,
    pub page_size: usize,
    /// The run is over (a violation was found): every request crashes its actor.
    pub aborted: bool,
}

/// The store all actors share, and the scheduler's handle on it.
pub struct World {
    pub state: Mutex<State>,
    pub changed: Condvar,
    pub hooks: Mutex<Vec<Hook>>,
}

impl World {
    pub fn new(page_size: usize) -> Arc<World> {
        Arc::new(World {
            state: Mutex::new(State {
                objects: BTreeMap::new(),
                e_tags: 0,
                now_ns: EPOCH_NS,
                scheduled: false,
                actors: Vec::new(),
                granted: None,
                steps: 0,
                trace: Vec::new(),
                page_size,
                aborted: false,
            }),
            changed: Condvar::new(),
            hooks: Mutex::new(Vec::new()),
        })
    }

    /// Runs `action`, then gives the request `fault`, when actor `actor` next sends a request
    /// whose text starts with `request` (once).
    pub fn on(
        &self,
        actor: usize,
        request: &str,
        fault: Fault,
        action: impl FnOnce() + Send + 'static,
    ) {
        self.hooks.lock().unwrap().push(Hook {
            actor,
            request: request.into(),
            action: Box::new(action),
            fault,
        });
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds an actor whose clock is `skew_ns` off the true time; returns its number.
    pub fn add_actor(&self, name: &str, skew_ns: i64) -> usize {
        let mut state = self.lock();
        state.actors.push(ActorSlot {
            name: name.into(),
            status: Status::Running,
            skew_ns,
            request: String::new(),
            faults: 0,
            sent_ns: 0,
        });
        state.actors.len() - 1
    }

    pub fn advance(&self, ns: i64) {
        self.lock().now_ns += ns;
    }

    /// The store as actor `actor` reaches it.
    pub fn store(self: &Arc<World>, actor: usize) -> Arc<SimStore> {
        Arc::new(SimStore {
            world: self.clone(),
            actor,
        })
    }

    /// The clock of actor `actor`.
    pub fn clock(self: &Arc<World>, actor: usize) -> Arc<SimClock> {
        Arc::new(SimClock {
            world: self.clone(),
            actor,
        })
    }

    /// Waits for the scheduler's turn, then runs `apply` on the state: the request's effect.
    fn request<T>(
        &self,
        actor: usize,
        what: String,
        apply: impl FnOnce(&mut State) -> Result<T>,
    ) -> Result<T> {
        let hook = {
            let mut hooks = self.hooks.lock().unwrap();
            let found = hooks
                .iter()
                .position(|h| h.actor == actor && what.starts_with(&h.request));
            found.map(|index| hooks.remove(index))
        };
        let mut state = self.lock();
        if !state.scheduled {
            let fault = match hook {
                Some(hook) => {
                    drop(state);
                    // On a thread of its own: this one is inside the client's runtime.
                    if let Err(panic) = std::thread::spawn(hook.action).join() {
                        std::panic::resume_unwind(panic);
                    }
                    state = self.lock();
                    hook.fault
                }
                None => Fault::None,
            };
            return apply_with(state, fault, apply);
        }
        if state.aborted {
            drop(state);
            std::panic::panic_any(Crash);
        }
        state.actors[actor].status = Status::Waiting;
        state.actors[actor].request = what;
        state.actors[actor].sent_ns = state.now_ns;
        self.changed.notify_all();
        let fault = loop {
            if let Some((granted, fault)) = state.granted
                && granted == actor
            {
                break fault;
            }
            if state.aborted {
                state.actors[actor].status = Status::Running;
                drop(state);
                std::panic::panic_any(Crash);
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        };
        state.granted = None;
        state.actors[actor].status = Status::Running;
        self.changed.notify_all();
        apply_with(state, fault, apply)
    }

    /// Marks actor `actor` done (its thread ends).
    pub fn done(&self, actor: usize) {
        let mut state = self.lock();
        state.actors[actor].status = Status::Done;
        self.changed.notify_all();
    }
}

/// Applies a request carrying `fault`.
fn apply_with<T>(
    mut state: MutexGuard<'_, State>,
    fault: Fault,
    apply: impl FnOnce(&mut State) -> Result<T>,
) -> Result<T> {
    let failed = || object_store::Error::Generic {
        store: "sim",
        source: "the connection was reset (simulated)".into(),
    };
    match fault {
        Fault::None => apply(&mut state),
        Fault::FailBefore => Err(failed()),
        Fault::LoseAnswer => {
            let _ = apply(&mut state);
            Err(failed())
        }
        Fault::Conflict => Err(object_store::Error::AlreadyExists {
            path: String::new(),
            source: "409 Conflict: a conditional request on the key is under way".into(),
        }),
        Fault::Crash => {
            drop(state);
            std::panic::panic_any(Crash)
        }
    }
}

/// An actor's clock: the true time plus its skew; its monotonic clock is the true time.
pub struct SimClock {
    world: Arc<World>,
    actor: usize,
}

impl Clock for SimClock {
    fn now_ns(&self) -> i64 {
        let state = self.world.lock();
        state.now_ns + state.actors.get(self.actor).map_or(0, |a| a.skew_ns)
    }

    fn monotonic_ns(&self) -> u64 {
        (self.world.lock().now_ns - EPOCH_NS) as u64
    }
}

/// The store as one actor reaches it.
pub struct SimStore {
    world: Arc<World>,
    actor: usize,
}

impl fmt::Display for SimStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimStore")
    }
}

impl fmt::Debug for SimStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimStore({})", self.actor)
    }
}

fn meta(key: &str, obj: &Obj) -> ObjectMeta {
    ObjectMeta {
        location: Path::from(key),
        last_modified: chrono::DateTime::from_timestamp_nanos(obj.modified_ns),
        size: obj.bytes.len() as u64,
        e_tag: Some(obj.e_tag.clone()),
        version: None,
    }
}

fn not_found(key: &str) -> object_store::Error {
    object_store::Error::NotFound {
        path: key.into(),
        source: "no such key".into(),
    }
}

fn unsupported(operation: &str) -> object_store::Error {
    object_store::Error::NotImplemented {
        operation: operation.into(),
        implementer: "SimStore".into(),
    }
}

#[async_trait::async_trait]
impl ObjectStore for SimStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let key = location.to_string();
        let bytes: Bytes = payload.into_iter().flatten().collect::<Vec<u8>>().into();
        let create = matches!(opts.mode, PutMode::Create);
        self.world
            .request(self.actor, format!("put {key}"), |state| {
                if create && state.objects.contains_key(&key) {
                    return Err(object_store::Error::Precondition {
                        path: key.clone(),
                        source: "the object exists".into(),
                    });
                }
                state.e_tags += 1;
                let e_tag = format!("\"e{}\"", state.e_tags);
                let modified_ns = state.now_ns;
                state.objects.insert(
                    key.clone(),
                    Obj {
                        bytes,
                        e_tag: e_tag.clone(),
                        modified_ns,
                    },
                );
                Ok(PutResult {
                    e_tag: Some(e_tag),
                    version: None,
                    extensions: Default::default(),
                })
            })
    }

    async fn put_multipart_opts(
        &self,
        _location: &Path,
        _opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        Err(unsupported("put_multipart"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let key = location.to_string();
        let head = options.head;
        self.world
            .request(self.actor, format!("get {key}"), |state| {
                let obj = state.objects.get(&key).ok_or_else(|| not_found(&key))?;
                if let Some(wanted) = &options.if_match
                    && wanted != &obj.e_tag
                {
                    return Err(object_store::Error::Precondition {
                        path: key.clone(),
                        source: "the ETag differs".into(),
                    });
                }
                let size = obj.bytes.len() as u64;
                let range = match &options.range {
                    None => 0..size,
                    Some(GetRange::Bounded(range)) => range.start..range.end.min(size),
                    Some(GetRange::Offset(start)) => *start..size,
                    Some(GetRange::Suffix(len)) => size.saturating_sub(*len)..size,
                };
                if range.start >= size && size > 0 {
                    return Err(object_store::Error::Generic {
                        store: "sim",
                        source: "the range starts after the object ends".into(),
                    });
                }
                let body = if head {
                    Bytes::new()
                } else {
                    obj.bytes.slice(range.start as usize..range.end as usize)
                };
                let stream = futures_util::stream::once(async move { Ok(body) }).boxed();
                Ok(GetResult {
                    payload: GetResultPayload::Stream(stream),
                    meta: meta(&key, obj),
                    range,
                    attributes: Default::default(),
                    extensions: Default::default(),
                })
            })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let world = self.world.clone();
        let actor = self.actor;
        locations
            .map(move |location| {
                let location = location?;
                let key = location.to_string();
                world.request(actor, format!("delete {key}"), |state| {
                    state.objects.remove(&key);
                    Ok(location.clone())
                })
            })
            .boxed()
    }

    fn list(&self, _prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        futures_util::stream::once(async { Err(unsupported("list")) }).boxed()
    }

    async fn list_with_delimiter(&self, _prefix: Option<&Path>) -> Result<ListResult> {
        Err(unsupported("list_with_delimiter"))
    }

    async fn copy_opts(&self, _from: &Path, _to: &Path, _options: CopyOptions) -> Result<()> {
        Err(unsupported("copy"))
    }
}

#[async_trait::async_trait]
impl PaginatedListStore for SimStore {
    /// One page of at most `page_size` keys after the offset or the page token (the last key
    /// of the page before): a listing of several pages is several steps, and the store may
    /// change between them, as S3's does.
    async fn list_paginated(
        &self,
        prefix: Option<&str>,
        opts: PaginatedListOptions,
    ) -> Result<PaginatedListResult> {
        let prefix = prefix.unwrap_or("").to_string();
        self.world
            .request(self.actor, format!("list {prefix}"), |state| {
                let after = opts.page_token.clone().or(opts.offset.clone());
                let mut objects = Vec::new();
                let mut page_token = None;
                for (key, obj) in state.objects.range(prefix.clone()..) {
                    if !key.starts_with(&prefix) {
                        break;
                    }
                    if after.as_ref().is_some_and(|after| key <= after) {
                        continue;
                    }
                    if objects.len() == state.page_size {
                        page_token = objects.last().map(|m: &ObjectMeta| m.location.to_string());
                        break;
                    }
                    objects.push(meta(key, obj));
                }
                Ok(PaginatedListResult {
                    result: ListResult {
                        common_prefixes: Vec::new(),
                        objects,
                        extensions: Default::default(),
                    },
                    page_token,
                })
            })
    }
}
