//! Threads for a caller that waits on the core (the Python seam): a few reusable rayon pools,
//! and long work run on a thread of its own while the caller watches for Ctrl-C.
//!
//! Why a thread of its own: Python runs signal handlers only on its main thread, and when the
//! training ran inside `pool.install` on rayon's threads, Ctrl-C took effect when training
//! ended (70 s later for a 200 MB line).  Now the caller's thread (Python's, with the GIL
//! released) polls for signals every 50 ms ([`Watch::run`]): the interrupt is raised at once,
//! and [`Watch::stop`] tells the abandoned work to end at its next check (every 256 merges,
//! every block of input, before each read of the file reader).  Stages without checks (the
//! candidates) finish first, in the background, and their result is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How many pools [`pool`] keeps.
const POOLS_KEPT: usize = 2;

/// The pools [`pool`] keeps, and the process they belong to.
struct Kept {
    /// the process id when the pools were made: a forked child has the parent's pools but
    /// none of their threads, and must not use them
    owner: u32,
    pools: Vec<(usize, Arc<rayon::ThreadPool>)>,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept {
    owner: 0,
    pools: Vec::new(),
});

fn kept() -> MutexGuard<'static, Kept> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

impl Kept {
    /// Drop the pools of another process (the parent of a fork) without touching them:
    /// their threads do not exist here, and their queues and locks are as the fork found
    /// them, so they are forgotten, never shut down.
    fn own(&mut self) {
        let me = std::process::id();
        if self.owner != me {
            for (_, p) in self.pools.drain(..) {
                std::mem::forget(p);
            }
            self.owner = me;
        }
    }
}

/// A rayon pool of `threads` workers, kept for reuse: starting threads for every
/// `encode_batch` call would cost more than small batches take.  `None` means all cores (the
/// Python seam reads `RAYON_NUM_THREADS` and passes its count); a number above the cores is
/// reduced to them.  Pools are kept by their number of workers, so `None` and a count of
/// all cores share one.  At most [`POOLS_KEPT`] pools are kept (the least recently used
/// goes; its threads end when its last call returns), so a process that asks for many
/// different counts still holds at most that many pools' workers.
///
/// In a child made by `fork`, the first call starts new pools (see [`Kept::own`]).
pub fn pool(threads: Option<usize>) -> Result<Arc<rayon::ThreadPool>> {
    // the cores, counted once: counting them reads the process's cgroup files, which took 35
    // of the 40 µs of an `encode_batch` of 8 short texts (perf)
    static CORES: OnceLock<usize> = OnceLock::new();
    if threads == Some(0) {
        return Err(Error::Value(
            "threads must be at least 1 (or None for all cores)".into(),
        ));
    }
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let workers = threads.map_or(cores, |n| n.min(cores));
    let mut kept = kept();
    kept.own();
    let pools = &mut kept.pools;
    if let Some(at) = pools.iter().position(|(k, _)| *k == workers) {
        let entry = pools.remove(at);
        let p = entry.1.clone();
        pools.push(entry); // most recently used last
        return Ok(p);
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .map_err(|e| Error::Runtime(format!("cannot start {workers} threads: {e}")))?,
    );
    if pools.len() >= POOLS_KEPT {
        pools.remove(0);
    }
    pools.push((workers, p.clone()));
    Ok(p)
}

/// Run `f`, whose parallel iterators then use one of the kept pools: the current one on a
/// worker of a pool, else the all-cores pool.  The core never uses rayon's global pool, since
/// a forked child inherits that pool without its threads and could never replace it.
pub fn parallel<R: Send>(f: impl FnOnce() -> R + Send) -> Result<R> {
    if rayon::current_thread_index().is_some() {
        return Ok(f());
    }
    Ok(pool(threads_from_environment())?.install(f))
}

/// The workers `RAYON_NUM_THREADS` asks for, as rayon itself reads it: unset, empty, `0` or
/// not a number means all cores.  (Calls from Python pass their count; this is for the
/// steps that run outside such a call, such as building an encoder when a model loads.)
fn threads_from_environment() -> Option<usize> {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
}

/// The kept pools, held across a `fork` (Python's `os.register_at_fork`, see `src/py/`):
/// taken before it, so that no other thread holds their lock when the process is copied, and
/// given back after it; in the child the parent's pools are forgotten at once.
pub struct ForkHold(MutexGuard<'static, Kept>);

/// Take the kept pools' lock before a fork.
pub fn hold_for_fork() -> ForkHold {
    ForkHold(kept())
}

impl ForkHold {
    /// In the child: forget the parent's pools, then let go of the lock.
    pub fn release_in_child(mut self) {
        self.0.own();
    }
}

/// What a caller shares with work it runs through [`Watch::run`]: a stop flag, the first error
/// of the caller's kind `E` (a Python exception raised by a callback or a signal handler, given
/// back by `run`), and the clock that spaces out progress reports.
pub struct Watch<E> {
    /// raised with the error: the work stops at its next check
    pub stop: Arc<AtomicBool>,
    error: Mutex<Option<E>>,
    /// when and for which stage the last progress report went out
    last: Mutex<Option<(Instant, String)>>,
}

impl<E: Send + From<Error>> Watch<E> {
    pub fn new() -> Watch<E> {
        Watch {
            stop: Arc::new(AtomicBool::new(false)),
            error: Mutex::new(None),
            last: Mutex::new(None),
        }
    }

    /// `Err(Interrupted)` once the work should stop.
    pub fn check(&self) -> Result<()> {
        match self.stop.load(Ordering::SeqCst) {
            true => Err(Error::Interrupted),
            false => Ok(()),
        }
    }

    /// Keep `e` for [`Watch::run`] to return (the first one wins), stop the work, and give the
    /// error with which the work ends.
    pub fn fail(&self, e: E) -> Error {
        self.error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
        self.stop.store(true, Ordering::SeqCst);
        Error::Interrupted
    }

    /// Is a progress report due?  A new stage and a finished one at once, the rest at most
    /// every 100 ms.
    pub fn due(&self, stage: &str, done: u64, total: u64) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some((t, s)) = &*last {
            let finished = total > 0 && done >= total;
            if s == stage && !finished && now.duration_since(*t) < Duration::from_millis(100) {
                return false;
            }
        }
        *last = Some((now, stage.to_string()));
        true
    }

    /// Run `work` on a thread of its own, or on a worker of `on`, while this thread calls
    /// `poll` every 50 ms.  When `poll` fails (Ctrl-C) this returns at once and stops the work,
    /// which ends at its next check (it owns everything it uses) and whose result is dropped.
    /// An error kept by [`Watch::fail`] comes back instead of the work's result.
    ///
    /// A training runs on a worker of the pool it trains on: its `pool.install` calls then run
    /// where they are, on a worker whose memory is warm.  (taylorswift.txt at 5,000,
    /// one thread, medians of 21 trainings, two interleaved runs: a thread started and ended
    /// per training, and two switches of threads for each stage that entered the pool, cost
    /// 0.2-0.3 ms per training; BPE 6.51-6.56 -> 6.26-6.30 ms, BoundlessBPE 7.67-7.81 ->
    /// 7.41-7.51 ms, SuperBPE 7.47-7.56 -> 7.20-7.27 ms.)
    pub fn run<T: Send + 'static>(
        &self,
        on: Option<&rayon::ThreadPool>,
        work: impl FnOnce() -> std::result::Result<T, E> + Send + 'static,
        mut poll: impl FnMut() -> std::result::Result<(), E>,
    ) -> std::result::Result<T, E>
    where
        E: 'static,
    {
        let (sender, receiver) = channel();
        let job = move || {
            let _ = sender.send(work());
        };
        match on {
            Some(pool) => pool.spawn(job),
            None => {
                std::thread::Builder::new()
                    .name("superword-train".into())
                    .spawn(job)
                    .map_err(|e| Error::Runtime(format!("cannot start the training thread: {e}")))?;
            }
        }
        let out = loop {
            match receiver.recv_timeout(Duration::from_millis(50)) {
                Ok(out) => break out,
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = poll() {
                        break Err(self.fail(e).into());
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    break Err(Error::internal("the training thread ended without a result").into())
                }
            }
        };
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => out,
        }
    }
}

impl<E: Send + From<Error>> Default for Watch<E> {
    fn default() -> Self {
        Watch::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_threads_is_refused_and_pools_are_reused() {
        assert!(matches!(pool(Some(0)), Err(Error::Value(m)) if m.contains("at least 1")));
        let a = pool(Some(1)).unwrap();
        assert!(Arc::ptr_eq(&a, &pool(Some(1)).unwrap()));
        assert_eq!(a.current_num_threads(), 1);
        // all cores, asked for by count or by `None`, is one pool
        let all = pool(None).unwrap();
        assert!(Arc::ptr_eq(&all, &pool(Some(all.current_num_threads())).unwrap()));
        assert!(Arc::ptr_eq(&all, &pool(Some(usize::MAX)).unwrap()));
    }

    #[test]
    fn progress_reports_are_spaced_but_new_and_finished_stages_go_out() {
        let w: Watch<Error> = Watch::new();
        assert!(w.due("merges", 1, 10));
        assert!(!w.due("merges", 2, 10));
        assert!(w.due("merges", 10, 10));
        assert!(w.due("candidates", 0, 5));
    }

    #[test]
    fn a_failed_poll_stops_the_work_and_returns_the_callers_error() {
        let w = Arc::new(Watch::<Error>::new());
        let inner = w.clone();
        let out: std::result::Result<(), Error> = w.run(
            None,
            move || loop {
                inner.check()?;
                std::thread::sleep(Duration::from_millis(5));
            },
            || Err(Error::Value("Ctrl-C".into())),
        );
        assert!(matches!(out, Err(Error::Value(m)) if m == "Ctrl-C"));
        assert!(w.check().is_err());
    }

    #[test]
    fn the_works_result_comes_back_when_nothing_failed() {
        use rayon::prelude::*;
        let w = Watch::<Error>::new();
        assert_eq!(w.run(None, || Ok(7), || Ok(())).unwrap(), 7);
        assert!(w.check().is_ok());
        // on a worker of a pool, which the work's own parallel steps then use
        let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap());
        let on = pool.clone();
        let sum = w.run(
            Some(&pool),
            move || {
                assert!(on.current_thread_index().is_some(), "not on the pool's worker");
                Ok(on.install(|| (1..=100u64).into_par_iter().sum::<u64>()))
            },
            || Ok(()),
        );
        assert_eq!(sum.unwrap(), 5050);
    }
}
