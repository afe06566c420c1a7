//! The threads a database's calls run on, off the JavaScript thread, and how their replies come
//! back: the database's own small pool rather than libuv's, so that a caller that awaits each
//! call in turn keeps one thread with warm caches, and replies come back in batches (measured
//! against libuv's pool on a 2-core VM: 1.46x the messages/s one at a time at `"normal"`, 1.3x
//! to 1.4x through the worker loop; CHANGELOG).
//!
//! - A call ([`Pool::submit`]) is queued with an id; the package starts the calls queued by the
//!   end of the JavaScript tick ([`Pool::flush`]); a thread of the pool runs it and puts its
//!   reply on the finished list. The first reply of a batch wakes the JavaScript thread through
//!   one thread-safe function, whose callback hands over every reply finished by then: one
//!   wake-up per batch, not per call.
//! - A call wakes the thread that fell asleep last, whose caches are warm, and a thread that just
//!   handed a reply over counts as about to look for the next call: a caller that awaits each call
//!   in turn is served by one thread (libuv's pool hands such calls to its threads in turn).
//!   Threads do not spin for the next call: on a loaded machine (2 cores, measured) spinning
//!   slowed every call down.
//! - Calls made at once (a `Promise.all` of acks, the worker loop's slots) go to one thread as
//!   one batch (issue 19): a thread woken takes every call queued by then (up to [`MAX_BATCH`]),
//!   which the JavaScript thread made in the time the wake-up took, and runs them one after the
//!   other in one transaction of the store, committed once ([`SqliteStore::batch`]); the
//!   replies of its writes go back together. One wake-up of one thread, no thread waiting for another's lock,
//!   one commit: on this 2-core VM, 8 threads woken for 8 calls spent more than the calls. A call
//!   made while every thread is busy wakes another (up to [`MAX_THREADS`], started when needed),
//!   whose batch meets the others in the store's group commit. A thread idle for [`IDLE`] ends,
//!   and every thread ends once the database is closed ([`Pool::close`]).
//! - A call that needs no commit is not answered after the batch's commit: a read (or a call
//!   refused on committed state, [`SqliteStore::batch`]) is handed over before the batch's next
//!   write starts, which may wait for another process's lock, and on a file the batch runs its
//!   reads first ([`Pool::submit_read`]), so no read waits behind a write (issue 19). The
//!   replies of the writes go back together: handed over one by one, they woke the JavaScript
//!   thread for part of them, and the calls it made next split into more batches and commits.
//! - The pool is the database's, not the process's: a batch is one transaction of one store, a
//!   database's second thread starts only for calls made while its first is busy, and they end
//!   with it; a process that opens many databases (a test suite) has threads for those in use
//!   (one each, mostly), none for those it closed.
//! - The thread-safe function keeps Node's event loop alive only while calls are out
//!   ([`Pool::hold`]): an open database alone does not keep a process running.
//!
//! [`SqliteStore::batch`]: deadletter_sqlite::SqliteStore::batch

use std::cell::RefCell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{Either, FnArgs, Function};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};

use crate::reply;
use crate::work::{Job, Shared};

/// The most threads a database runs calls on at once.
pub const MAX_THREADS: usize = 16;

/// The most calls a thread takes as one batch.
pub const MAX_BATCH: usize = 64;

/// How long a thread sleeps without a call before it ends.
pub const IDLE: Duration = Duration::from_secs(10);

/// What a call resolves to (its reply's JSON text) or rejects with (what the user's clock threw).
pub type Reply = napi::Result<String>;

/// The replies of a batch as the JavaScript callback takes them: the calls' ids, and their
/// replies.
type Batch = (Vec<u32>, Vec<Either<String, napi::Error>>);

/// The package's callback that settles the calls of a batch: `deliver(ids, replies)`.
pub type Deliver<'a> = Function<'a, FnArgs<Batch>, ()>;

type Notify = ThreadsafeFunction<(), (), FnArgs<Batch>, Status, false, true>;

/// The calls waiting for a thread, and the threads.
#[derive(Default)]
struct Queue {
    calls: VecDeque<Call>,
    /// Threads alive.
    threads: usize,
    /// Threads started that have not looked at the queue yet.
    starting: usize,
    /// Threads asleep, the last to fall asleep last.
    asleep: Vec<Arc<Sleeper>>,
    /// Threads woken that have not looked at the queue yet.
    wakeups: usize,
    /// Set when the database is closed, or every handle of it is gone: the threads end once the
    /// queue is empty.
    closed: bool,
}

/// A call queued: its id, its job, whether it only reads.
struct Call {
    id: u32,
    job: Job,
    read: bool,
}

/// A thread asleep.
struct Sleeper {
    thread: Thread,
    /// Set (under the queue's lock) when it is woken.
    woken: AtomicBool,
}

impl Queue {
    /// Marks the thread that fell asleep last as woken, if any: the caller unparks it once it has
    /// let go of the queue's lock, which the thread takes first thing (unparked under the lock,
    /// the thread woke to wait for it: one more futex wait and wake, and a context switch, per
    /// call one at a time; strace, issue 19).
    fn wake_one(&mut self) -> Option<Thread> {
        let sleeper = self.asleep.pop()?;
        self.wakeups += 1;
        sleeper.woken.store(true, Ordering::SeqCst);
        Some(sleeper.thread.clone())
    }
}

/// The replies finished and not yet handed to JavaScript.
#[derive(Default)]
struct Finished {
    replies: Mutex<Vec<(u32, Reply)>>,
    /// Whether the JavaScript thread was told of them (cleared as it takes them).
    told: AtomicBool,
}

impl Finished {
    /// The replies finished, for the JavaScript callback (on its thread).
    fn take(&self) -> Batch {
        self.told.store(false, Ordering::SeqCst);
        lock(&self.replies)
            .drain(..)
            .map(|(id, reply)| (id, reply.map_or_else(Either::B, Either::A)))
            .unzip()
    }
}

struct State {
    shared: Shared,
    /// Whether a batch runs its reads before its writes: where the store reads through a
    /// connection of its own, which never sees a write not committed yet (a file).
    reads_first: bool,
    queue: Mutex<Queue>,
    /// Threads that finished a call (its reply is out) and have not looked at the queue since:
    /// the next call of a caller that awaited that reply finds one of them.
    returning: AtomicUsize,
    finished: Arc<Finished>,
    /// Tells the JavaScript thread that replies are finished.
    notify: Mutex<Notify>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a database's replies reach JavaScript: made on the JavaScript thread, at `open`.
pub struct Replies {
    finished: Arc<Finished>,
    notify: Notify,
}

impl Replies {
    /// Replies that go to `deliver`.
    pub fn new(deliver: &Deliver<'_>) -> napi::Result<Self> {
        let finished = Arc::new(Finished::default());
        let taken = Arc::clone(&finished);
        let notify = deliver
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |_| Ok(FnArgs::from(taken.take())))?;
        Ok(Self { finished, notify })
    }
}

/// A database's pool (its handles share it); its threads end once the last handle is dropped.
pub struct Pool {
    state: Arc<State>,
    next_id: AtomicU32,
}

impl Pool {
    /// The pool of the database `shared`, whose replies go as `replies` says.
    pub fn new(shared: Shared, replies: Replies) -> Self {
        Self {
            state: Arc::new(State {
                reads_first: shared.engine.store().reads_apart(),
                shared,
                queue: Mutex::new(Queue::default()),
                returning: AtomicUsize::new(0),
                finished: replies.finished,
                notify: Mutex::new(replies.notify),
            }),
            next_id: AtomicU32::new(0),
        }
    }

    /// The database's engine and clock.
    pub fn shared(&self) -> &Shared {
        &self.state.shared
    }

    /// Queues `job`, to start at the next [`Pool::flush`]; returns the id its reply will be
    /// delivered with.
    pub fn submit(&self, job: Job) -> u32 {
        self.queue(job, false)
    }

    /// Queues `job`, a call that only reads, as [`Pool::submit`] does. On a file, it runs before
    /// the writes of its batch, whose outcome it would not see anyway (they are not committed
    /// before the batch ends), rather than after a write that may wait up to 30 s for another
    /// process's lock (issue 19: `q.enqueue(x); await q.stats()` waited for it).
    pub fn submit_read(&self, job: Job) -> u32 {
        self.queue(job, true)
    }

    fn queue(&self, job: Job, read: bool) -> u32 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.state.queue)
            .calls
            .push_back(Call { id, job, read });
        id
    }

    /// Starts the calls queued: the package calls it once per JavaScript tick that made calls,
    /// so that a thread woken takes them all as one batch rather than the first alone (a thread
    /// woken on the other core starts within microseconds, while the JavaScript thread takes
    /// tens of them per call it makes).
    pub fn flush(&self) {
        let state = &self.state;
        let mut queue = lock(&state.queue);
        // A thread about to look at the queue takes these calls (the threads running a batch do
        // not count).
        let coming = queue.starting + queue.wakeups + state.returning.load(Ordering::SeqCst);
        if queue.calls.is_empty() || coming > 0 {
            return;
        }
        if let Some(thread) = queue.wake_one() {
            drop(queue);
            thread.unpark();
        } else if queue.threads < MAX_THREADS {
            let thread = Arc::clone(state);
            let started = std::thread::Builder::new()
                .name("deadletter".into())
                .spawn(move || thread.serve());
            // Out of threads: the call waits for one of the threads running.
            if started.is_ok() {
                queue.threads += 1;
                queue.starting += 1;
            }
        }
    }

    /// Ends the threads once the calls queued are done: the package closes the database once
    /// every call made has settled, and a closed database's threads are not left to end after
    /// [`IDLE`] (issue 19: 100 open/call/close cycles left 100 threads; a tight loop, thousands).
    /// A call made later still runs, on a thread that ends after it.
    pub fn close(&self) {
        let mut queue = lock(&self.state.queue);
        queue.closed = true;
        let asleep: Vec<_> = std::iter::from_fn(|| queue.wake_one()).collect();
        drop(queue);
        asleep.iter().for_each(Thread::unpark);
    }

    /// Whether Node's event loop stays alive for this database's replies: while calls are out.
    #[allow(deprecated)] // napi-rs's refer and unref: the package counts the calls out
    pub fn hold(&self, env: Env, hold: bool) -> napi::Result<()> {
        let mut notify = lock(&self.state.notify);
        if hold {
            notify.refer(&env)
        } else {
            notify.unref(&env)
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.close();
    }
}

impl State {
    /// A thread of the pool: runs calls until the pool is closed or it slept for [`IDLE`].
    fn serve(&self) {
        let mut queue = lock(&self.queue);
        queue.starting -= 1;
        loop {
            if !queue.calls.is_empty() {
                let n = queue.calls.len().min(MAX_BATCH);
                let batch: Vec<_> = queue.calls.drain(..n).collect();
                // The rest, when a thread sleeps; else this one's next batch.
                let other = (!queue.calls.is_empty())
                    .then(|| queue.wake_one())
                    .flatten();
                drop(queue);
                other.as_ref().map(Thread::unpark);
                self.run(batch);
                queue = lock(&self.queue);
                self.returning.fetch_sub(1, Ordering::SeqCst);
            } else if queue.closed {
                break;
            } else {
                let me = Arc::new(Sleeper {
                    thread: std::thread::current(),
                    woken: AtomicBool::new(false),
                });
                queue.asleep.push(Arc::clone(&me));
                drop(queue);
                let until = Instant::now() + IDLE;
                while !me.woken.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::park_timeout(until.saturating_duration_since(Instant::now()));
                }
                queue = lock(&self.queue);
                if me.woken.load(Ordering::SeqCst) {
                    // `wake_one` counted it among the threads about to take a call.
                    queue.wakeups -= 1;
                } else {
                    // Idle for long: ends.
                    queue.asleep.retain(|other| !Arc::ptr_eq(other, &me));
                    break;
                }
            }
        }
        queue.threads -= 1;
    }

    /// Runs one call.
    fn call(&self, job: Job) -> Reply {
        catch_unwind(AssertUnwindSafe(|| self.shared.run(job)))
            .unwrap_or_else(|_| Err(napi::Error::from_reason("deadletter: a call panicked")))
    }

    /// Runs a batch of calls, several in one transaction of the store, and hands their replies
    /// over (the thread counted as returning before the last): those of its writes together once
    /// committed (one wake-up of the JavaScript thread, whose next calls then make one batch);
    /// those of calls that need no commit (a read, a refusal of committed state) before the
    /// next write starts, since it may wait up to 30 s for another process's lock (issue 19),
    /// or with the others. A call whose writes were lost with that transaction's commit replies
    /// with the commit's store error.
    fn run(&self, mut batch: Vec<Call>) {
        if batch.len() == 1 {
            let Call { id, job, .. } = batch.remove(0);
            let reply = self.call(job);
            self.hand_over(vec![(id, reply)], true);
            return;
        }
        if self.reads_first {
            batch.sort_by_key(|call| !call.read); // stable: in the order they were made
        }
        let ready = RefCell::new(Vec::new());
        let steps = batch.into_iter().map(|Call { id, job, read }| {
            let ready = &ready;
            move || {
                if !read {
                    self.hand_over(ready.take(), false);
                }
                (id, self.call(job))
            }
        });
        let store = self.shared.engine.store();
        let rest = store.batch(steps, |answer| ready.borrow_mut().push(answer));
        let mut replies = ready.into_inner();
        replies.extend(
            rest.into_iter()
                .map(|((id, reply), committed)| match (reply, committed) {
                    (Ok(_), Err(err)) => (id, Ok(reply::error(&err))),
                    (reply, _) => (id, reply),
                }),
        );
        self.hand_over(replies, true);
    }

    /// Puts `replies` on the finished list and wakes the JavaScript thread unless it was told of
    /// the replies there already; `last`: the thread's batch is done (it counts as returning).
    fn hand_over(&self, replies: Vec<(u32, Reply)>, last: bool) {
        if last {
            self.returning.fetch_add(1, Ordering::SeqCst);
        } else if replies.is_empty() {
            return;
        }
        lock(&self.finished.replies).extend(replies);
        if !self.finished.told.swap(true, Ordering::SeqCst) {
            lock(&self.notify).call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}
