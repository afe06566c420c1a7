//! Checkpoints off the callers' path (issue 24): copying the WAL into the database file is done by
//! a thread of the store, not by the call whose commit filled the WAL.
//!
//! SQLite checkpoints on the committing thread once the WAL reaches `wal_autocheckpoint` pages.
//! At `"normal"` that call then waits for three syncs: the whole WAL before the copy (16 MiB at
//! 4000 pages), the database file after it, and the WAL's header when the next commit starts it
//! over. Measured in an enqueue loop (issue 24), the one call in 950 that checkpointed took 10 to
//! 18 ms, against 14 us for the median call: 70 % of the loop's time.
//!
//! Here the writer connection never checkpoints by itself: its WAL hook ([`note_frames`]) only
//! notes how many frames the WAL holds. Once it holds [`START_NORMAL`] frames ([`START_FULL`] at
//! `"full"`), the store's checkpoint thread (started then, with its own connection) runs PASSIVE
//! checkpoints, which neither wait for nor hold a lock that writers need: it syncs the WAL and
//! copies it while the callers go on writing. A pass copies the frames that were there when it
//! began; the next pass the ones written meanwhile, until at most [`TAIL`] are left (or [`PASSES`]
//! passes ran). The next commit then copies that tail itself, on the caller's path (small syncs),
//! so that the whole WAL is in the database file and the next write starts it over from its
//! beginning: the WAL stays as bounded as with SQLite's own checkpoints. A commit that finds three
//! times that in the WAL (the thread cannot keep up, or another connection's read transaction holds
//! the copy back) checkpoints on its own path, as SQLite does.
//!
//! Nothing about durability changes: the checkpoints are SQLite's own, with the store's
//! `synchronous` setting, run by another connection (any connection of any process may
//! checkpoint a WAL file). Each pass holds the fork gate, so a fork waits for it; in a forked
//! child the thread is gone and its connection is closed by the fork hooks, like the others.

use std::cell::Cell;
use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::hooks::Wal;
use rusqlite::{Connection, OpenFlags};

use crate::fork::{self, Inherited};

/// The WAL's length, in frames (pages), at which the thread starts checkpointing at `"normal"` (see
/// `WAL_PRAGMAS` in `store.rs` for why not SQLite's 1000), 4000: measured against 1000 and 2000
/// (issue 24, 2026-12-02), at 1000 a commit costs fewer instructions (each frame's entry in the WAL
/// index's hash table probes past fewer copies of the same page; callgrind: 0.91x per
/// enqueue+claim+ack in Node, 0.88x in Python, 0.99x per enqueue), but the syncs made on the
/// committing call (the tail it copies: the WAL and the database file; the WAL's header when it
/// starts over) come 2 to 4 times as often (58 to 129 per 10 000 enqueues in 4 runs against 21 to
/// 33; 63 to 69 at 2000), and at `"normal"` the calls got slower: a single enqueue 0.88x (Python)
/// and 0.90x (Node), Node one at a time 0.90x and with concurrency 8 0.93x (medians of 8 to 12
/// interleaved pairs, load 6 to 9).
pub const START_NORMAL: i64 = 4000;

/// The same at `"full"`, SQLite's own 1000 (issues 19 and 24, 2026-12-02, on an idle machine):
/// there every commit syncs the WAL, and (the likely cause) a commit that makes the WAL file longer than it ever was
/// makes that sync write the file system's metadata too (the file's new size and blocks), while a
/// commit into a WAL that started over rewrites blocks the file already has. A WAL that starts over
/// at 1000 frames stops growing after 4 MiB; at 4000 it grows for the first 16 MiB after each open,
/// the whole of a short-lived process's life. Measured in interleaved rounds, 1000 against 4000 at
/// `"full"`: Node one at a time 1.20x-1.41x the messages/s (400 messages a round) and 1.08x-1.25x
/// (1 200: the gain shrinks once the WAL at 4000 has started over), with concurrency 8 1.10x-1.17x;
/// Python enqueue+claim+ack 1.12x-1.29x, single enqueue 1.01x-1.16x (4 to 6 rounds each, load
/// 0.7-1.0).
pub const START_FULL: i64 = 1000;

/// At most this many frames left after a pass are copied by the next commit itself.
pub const TAIL: i64 = 256;

/// Passes the thread runs before it leaves what is left to the next commit, however long.
pub const PASSES: u32 = 8;

/// The WAL's length at which every commit checkpoints on its own path, as SQLite's
/// `wal_autocheckpoint` does: three times the store's start ([`START_NORMAL`], [`START_FULL`]).
const fn limit_of(start: i64) -> i64 {
    3 * start
}

thread_local! {
    /// The frames in the WAL after this thread's last commit (0: no commit wrote any since
    /// [`Checkpoints::committed`] last read it).
    static FRAMES: Cell<c_int> = const { Cell::new(0) };
}

/// The writer connection's WAL hook (`sqlite3_wal_hook`, called after each commit that wrote
/// frames, on the committing thread): notes the WAL's length for [`Checkpoints::committed`].
/// Installing it replaces SQLite's automatic checkpoints on that connection.
#[allow(clippy::unnecessary_wraps)] // the hook's signature
pub fn note_frames(_: &Wal, frames: c_int) -> rusqlite::Result<()> {
    FRAMES.set(frames);
    Ok(())
}

/// Where the WAL's copy stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    /// Nothing to do until the WAL holds the store's start of frames.
    #[default]
    Idle,
    /// The thread is copying.
    Running,
    /// The thread is done; the next commit copies the rest.
    Tail,
}

#[derive(Debug, Default)]
struct State {
    phase: Phase,
    /// The WAL's length after the last commit.
    frames: i64,
    /// The frames copied so far (the last pass's count).
    copied: i64,
    closed: bool,
}

/// The checkpoint thread's connection, closed by the fork hooks in a forked child.
#[derive(Debug, Default)]
struct Pass(Mutex<Option<Connection>>);

impl Inherited for Pass {
    fn take_connection(&self) -> Option<Connection> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    conn: Arc<Pass>,
    /// The WAL's length at which the thread starts ([`START_NORMAL`] or [`START_FULL`]).
    start: i64,
}

/// The checkpoints of one store's writer connection (see the module's documentation).
#[derive(Debug)]
pub struct Checkpoints {
    /// The database file, for the thread's connection (`None`: no thread; every checkpoint is
    /// made by a commit, at `start` frames).
    path: Option<PathBuf>,
    /// `PRAGMA synchronous = ...` of the store, for the thread's connection.
    synchronous: &'static str,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Checkpoints {
    /// The checkpoints of a connection on `path` (`None` for a database without a file) with
    /// the `synchronous` pragma given, starting at `start` frames ([`START_NORMAL`] or
    /// [`START_FULL`]).
    pub fn new(path: Option<PathBuf>, synchronous: &'static str, start: i64) -> Self {
        Self {
            path,
            synchronous,
            shared: Arc::new(Shared {
                state: Mutex::default(),
                wake: Condvar::new(),
                conn: Arc::default(),
                start,
            }),
            thread: Mutex::new(None),
        }
    }

    /// After a commit on the writer connection `conn`, on the committing thread: starts the
    /// thread's passes, or copies the tail they left, or (at three times `start`) checkpoints here.
    pub fn committed(&self, conn: &Connection) {
        let frames = i64::from(FRAMES.replace(0));
        if frames == 0 {
            return;
        }
        let here = {
            let mut state = self.state();
            state.frames = frames;
            match state.phase {
                Phase::Tail => {
                    state.phase = Phase::Idle;
                    // Fewer frames than copied: the WAL was started over since.
                    frames > state.copied
                }
                Phase::Idle if frames >= self.shared.start && !state.closed => {
                    if self.spawn() {
                        state.phase = Phase::Running;
                        self.shared.wake.notify_one();
                        false
                    } else {
                        true
                    }
                }
                _ => false,
            }
        };
        if frames >= limit_of(self.shared.start) {
            limit(conn);
        } else if here {
            // An error here is the next write's: a checkpoint changes no data.
            let _ = passive(conn);
        }
    }

    /// Stops the thread (after its current pass) and closes its connection.
    pub fn close(&self) {
        self.state().closed = true;
        self.shared.wake.notify_all();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        if let Some(conn) = self.shared.conn.take_connection() {
            let _ = conn.close();
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the thread with its connection, if not yet; `false` when there is none (no file,
    /// the store was closed, or the connection or thread could not be made).
    fn spawn(&self) -> bool {
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if thread.is_some() {
            return true;
        }
        let Some(path) = &self.path else {
            return false;
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let Ok(conn) = Connection::open_with_flags(path, flags) else {
            return false;
        };
        if conn.execute_batch(self.synchronous).is_err() {
            return false;
        }
        *self
            .shared
            .conn
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(conn);
        fork::track(&self.shared.conn);
        let shared = Arc::clone(&self.shared);
        match std::thread::Builder::new()
            .name("deadletter-checkpoint".into())
            .spawn(move || run(&shared))
        {
            Ok(handle) => {
                *thread = Some(handle);
                true
            }
            Err(_) => false,
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.close();
    }
}

/// The thread: waits for a start, runs passes until the tail is short, and again.
fn run(shared: &Shared) {
    let lock = || shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        {
            let mut state = lock();
            while state.phase != Phase::Running && !state.closed {
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.closed {
                return;
            }
        }
        for pass in 1..=PASSES {
            let copied = {
                let _gate = fork::enter();
                let conn = shared.conn.0.lock().unwrap_or_else(PoisonError::into_inner);
                conn.as_ref().map(passive)
            };
            let mut state = lock();
            if state.closed {
                return;
            }
            let Some(Ok(copied @ 0..)) = copied else {
                // Failed, or -1: another connection's checkpoint runs (another process's
                // thread). The next commit past the start starts again; those at the limit take
                // over.
                state.phase = Phase::Idle;
                break;
            };
            state.copied = copied;
            // Fewer frames than copied: the WAL was started over since, nothing is left.
            let left = (state.frames - copied).max(0);
            if left == 0 {
                state.phase = Phase::Idle;
                break;
            }
            if left <= TAIL || pass == PASSES || state.frames >= limit_of(shared.start) {
                state.phase = Phase::Tail;
                break;
            }
        }
    }
}

/// At the limit: checkpoints on `conn`, the writer connection, waiting for the thread's pass in
/// progress, if any (a checkpoint fails at once while another one runs), for up to
/// [`crate::BUSY_TIMEOUT`]: the WAL grows no further than what is written meanwhile.
fn limit(conn: &Connection) {
    let started = Instant::now();
    while let Ok(-1) = passive(conn) {
        if started.elapsed() >= crate::BUSY_TIMEOUT {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A PASSIVE checkpoint on `conn`: the frames copied into the database file so far.
fn passive(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(2))
}
