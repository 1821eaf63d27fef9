//! The Python seam: everything PyO3 lives here.  Each function converts its arguments, calls
//! the core with the GIL released, and converts the result back; the core's errors (and
//! panics) become Python exceptions here, once.

mod candidates;
mod counts;
mod extend;
mod phase2;
mod tokenizer;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use pyo3::exceptions::{PyFileNotFoundError, PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator};

use crate::control::Control;
use crate::error::Error;
use crate::input::{take_batch, Batches, Documents, Files};
use crate::minbpe::{MergeRow, MinMerge, MinbpeEncoder};
use crate::pretokenize::Pretokenizer;
use crate::threads::{pool, Watch};
use crate::tokenizer::Tokenizer;
use crate::train::{bpe::Picky, Config};
use tokenizer::PyTokenizer;

// errors, progress and Ctrl-C

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Value(m) => PyValueError::new_err(m),
            Error::NotFound(m) => PyFileNotFoundError::new_err(m),
            Error::Io(m) => PyOSError::new_err(m),
            Error::Runtime(m) => PyRuntimeError::new_err(m),
            Error::Memory(m) => pyo3::exceptions::PyMemoryError::new_err(m),
            Error::Interrupted => PyKeyboardInterrupt::new_err("training interrupted"),
        }
    }
}

/// Run `f`, turning a panic into a Python `RuntimeError` instead of aborting the interpreter.
fn guard<T>(f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    Ok(crate::error::catch(f)?)
}

/// Progress for an optional Python callable `(stage, done, total)`, at most every 100 ms, and
/// a stop when Ctrl-C is pressed or the callable raises (see `crate::threads`).
struct PyControl {
    callback: Option<Py<PyAny>>,
    watch: Watch<PyErr>,
}

impl Control for PyControl {
    fn progress(&self, stage: &str, done: u64, total: u64) -> Result<(), Error> {
        self.watch.check()?;
        match &self.callback {
            Some(f) if self.watch.due(stage, done, total) => {
                Python::attach(|py| f.call1(py, (stage, done, total)).map(|_| ()))
                    .map_err(|e| self.watch.fail(e))
            }
            _ => Ok(()),
        }
    }
}

/// Run `work` on a thread of its own with the GIL released, while this thread checks for
/// Ctrl-C; an exception raised by `progress` (or by Python code the work calls) comes back.
fn watched<T: Send + 'static>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(&Arc<PyControl>) -> Result<T, Error> + Send + 'static,
) -> PyResult<T> {
    watched_on(None, py, progress, work)
}

/// [`watched`], with the work on a worker of `on` when given: a training, on the pool it
/// trains on (see [`Watch::run`]).
fn watched_on<T: Send + 'static>(
    on: Option<&rayon::ThreadPool>,
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(&Arc<PyControl>) -> Result<T, Error> + Send + 'static,
) -> PyResult<T> {
    let control = Arc::new(PyControl {
        callback: progress,
        watch: Watch::new(),
    });
    let inner = control.clone();
    let check_signals = || Python::attach(|py| py.check_signals());
    py.detach(|| {
        control
            .watch
            .run(on, move || guard(|| work(&inner)), check_signals)
    })
}

// training: the options become a `Config`, the input a stream of documents

/// The options of `superword.train` after its checks, as a dict (`_TrainOptions` in
/// `_core.pyi`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct TrainOptions {
    vocab_size: usize,
    algorithm: String,
    supermerges: Option<usize>,
    pattern: String,
    script_pattern: Option<String>,
    scripts: Option<Vec<String>>,
    greedy_split: bool,
    tau: f64,
    blowup: bool,
    pub threads: Option<usize>,
    pub progress: Option<Py<PyAny>>,
}

impl TrainOptions {
    pub(crate) fn config(&self) -> Result<Config, Error> {
        let picky = Picky {
            tau: self.tau,
            blowup: self.blowup,
        };
        let (script_pattern, scripts) = (self.script_pattern.as_deref(), self.scripts.as_deref());
        Config::new(
            self.vocab_size,
            &self.algorithm,
            self.supermerges,
            &self.pattern,
            script_pattern,
            scripts,
            self.greedy_split,
            picky,
        )
    }
}

/// The whole training run, on the documents that `documents` makes on the training thread.
fn train(
    py: Python<'_>,
    options: TrainOptions,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents> + Send + 'static,
) -> PyResult<PyTokenizer> {
    let config = options.config()?;
    let pool = pool(options.threads)?;
    let on = pool.clone();
    let (tokenizer, stats) = watched_on(Some(&on), py, options.progress, move |control| {
        let mut stats = Vec::new();
        let model = crate::train::train(&mut *documents(control), &config, &pool, &**control, &mut stats)?;
        // the paper's encoding, without the greedy split (SPEC 3.1)
        Ok((Tokenizer::trained(model), stats))
    })?;
    Ok(PyTokenizer::new(tokenizer, stats))
}

/// A document that is a `str` with a lone surrogate (which UTF-8 cannot hold) fails to
/// convert with Python's bare `UnicodeEncodeError`; say which document and where, as the
/// reference does (`reference/count.py`).  Any other error stays as it is.
fn with_surrogate_named(py: Python<'_>, err: PyErr, doc: &Bound<'_, PyAny>, index: usize) -> PyErr {
    if !err.is_instance_of::<pyo3::exceptions::PyUnicodeEncodeError>(py) {
        return err;
    }
    let found = || -> PyResult<(usize, u32)> {
        let k: usize = err.value(py).getattr("start")?.extract()?;
        let ord = py.import("builtins")?.getattr("ord")?;
        Ok((k, ord.call1((doc.get_item(k)?,))?.extract()?))
    };
    match found() {
        Ok((k, c)) => PyValueError::new_err(format!(
            "document {index} of inputs holds a lone surrogate U+{c:04X} at index {k}; it cannot be encoded as UTF-8"
        )),
        Err(_) => err,
    }
}

/// Files read by the core (stopped by Ctrl-C between blocks).
fn files(paths: Vec<String>, text_field: String, control: &Arc<PyControl>) -> Box<dyn Documents> {
    let stop = Some(control.watch.stop.clone());
    Box::new(Files {
        paths,
        text_field,
        stop,
        read_ahead: false,
    })
}

/// A Python iterator of `str`, read in batches on Python's thread; counted in `tally` if given.
fn iterated(iter: Py<PyIterator>, control: &Arc<PyControl>, tally: Option<Arc<Tally>>) -> Box<dyn Documents> {
    let control = control.clone();
    let mut seen = 0; // documents read so far, to name one that cannot be read
    Box::new(Batches(move || {
        control.watch.check()?;
        let batch = Python::attach(|py| {
            let docs = iter.bind(py).clone().enumerate();
            take_batch(docs.map(|(i, d)| {
                let d = d?;
                d.extract().map_err(|e| with_surrogate_named(py, e, &d, seen + i))
            }))
        });
        let batch = batch.map_err(|e| control.watch.fail(e))?;
        seen += batch.len();
        if let Some(t) = &tally {
            t.docs.fetch_add(batch.len() as u64, Relaxed);
            t.bytes
                .fetch_add(batch.iter().map(|d| d.len() as u64).sum(), Relaxed);
        }
        Ok(batch)
    }))
}

/// Train on files (`.txt`, `.jsonl`, optionally `.gz`) read by the Rust core.
#[pyfunction]
fn train_files(
    py: Python<'_>,
    paths: Vec<String>,
    text_field: String,
    options: TrainOptions,
) -> PyResult<PyTokenizer> {
    train(py, options, move |control| files(paths, text_field, control))
}

/// Train on a Python iterator of `str` documents, read in batches of about 8 MB (the GIL is
/// taken only to read a batch); an exception it raises stops the training.
#[pyfunction]
fn train_iter(py: Python<'_>, documents: Bound<'_, PyAny>, options: TrainOptions) -> PyResult<PyTokenizer> {
    let iter = PyIterator::from_object(&documents)?.unbind();
    train(py, options, move |control| iterated(iter, control, None))
}

/// [`train_iter`] on a list (or tuple) of `str`, `superword.train`'s usual input, with the
/// number of documents and of their UTF-8 bytes that the trained model's provenance records:
/// counted here as the batches are read, instead of by two Python generators the documents
/// passed through one at a time, each encoded to UTF-8 once more to be measured (
/// taylorswift.txt at 5,000, 988 documents: a whole `superword.train` call 54.7 -> 51.8 M
/// instructions for BPE, 65.5 -> 62.4 M for BoundlessBPE, 62.4 -> 59.4 M for SuperBPE).
#[pyfunction]
fn train_docs(
    py: Python<'_>,
    documents: Bound<'_, PyAny>,
    options: TrainOptions,
) -> PyResult<(PyTokenizer, u64, u64)> {
    let iter = PyIterator::from_object(&documents)?.unbind();
    let tally = Arc::new(Tally::default());
    let seen = tally.clone();
    let tokenizer = train(py, options, move |control| iterated(iter, control, Some(seen)))?;
    let (docs, bytes) = (tally.docs.load(Relaxed), tally.bytes.load(Relaxed));
    Ok((tokenizer, docs, bytes))
}

/// Documents and UTF-8 bytes read (see [`train_docs`]).
#[derive(Default)]
struct Tally {
    docs: AtomicU64,
    bytes: AtomicU64,
}

// minbpe

/// Train minbpe-style (SPEC 6) on `text`: one chunk (`pattern=None`, BasicTokenizer) or the
/// pattern's findall chunks.  `on_merge(left, right, id, count)` sees each merge; the result
/// has `(left, right, id, count, round)` per merge.
#[pyfunction]
#[pyo3(signature = (text, num_merges, pattern, batch_size, on_merge=None))]
fn minbpe_train(
    py: Python<'_>,
    text: String,
    num_merges: usize,
    pattern: Option<String>,
    batch_size: usize,
    on_merge: Option<Py<PyAny>>,
) -> PyResult<Vec<MergeRow>> {
    let merges = watched(py, None, move |control| {
        let pattern = pattern.as_deref();
        crate::minbpe::train_text(&text, num_merges, pattern, batch_size, &**control, |m| {
            control.watch.check()?;
            let Some(f) = &on_merge else { return Ok(()) };
            Python::attach(|py| f.call1(py, (m.pair.0, m.pair.1, m.id, m.count)).map(|_| ()))
                .map_err(|e| control.watch.fail(e))
        })
    })?;
    Ok(merges.iter().map(MinMerge::row).collect())
}

/// minbpe's encoder: merges by smallest id within each chunk (the whole text without a pattern).
#[pyclass(name = "MinbpeEncoder", module = "superword._core")]
pub struct PyMinbpeEncoder(MinbpeEncoder);

#[pymethods]
impl PyMinbpeEncoder {
    #[new]
    #[pyo3(signature = (merges, pattern=None))]
    fn new(merges: Vec<((u32, u32), u32)>, pattern: Option<String>) -> PyResult<Self> {
        Ok(PyMinbpeEncoder(MinbpeEncoder::new(merges, pattern.as_deref())?))
    }

    fn encode_ordinary(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        py.detach(|| guard(|| self.0.encode_ordinary(text)))
    }
}

// helpers for tests and tools

/// The pretokens of `text` (the hand-written matchers for the built-in patterns).
#[pyfunction]
#[pyo3(signature = (text, pattern, script_pattern=None, scripts=None))]
fn pretokenize(
    py: Python<'_>,
    text: &str,
    pattern: &str,
    script_pattern: Option<String>,
    scripts: Option<Vec<String>>,
) -> PyResult<Vec<String>> {
    let pre = Pretokenizer::new(pattern, script_pattern.as_deref(), scripts.as_deref())?;
    py.detach(|| guard(|| Ok(pre.pieces(text)?.into_iter().map(str::to_string).collect())))
}

/// A byte per code point (0x110000 of them; surrogates give 0).
fn table_of(py: Python<'_>, f: impl Fn(char) -> u8) -> Bound<'_, PyBytes> {
    let table = (0..0x110000u32).map(|cp| char::from_u32(cp).map_or(0, &f));
    PyBytes::new(py, &table.collect::<Vec<u8>>())
}

/// The class bits (classes.txt) of every code point.
#[pyfunction]
fn char_class_table(py: Python<'_>) -> Bound<'_, PyBytes> {
    table_of(py, crate::pretokenize::classes::bits)
}

/// The script index of every code point (surrogates: Common).
#[pyfunction]
fn script_table(py: Python<'_>) -> Bound<'_, PyBytes> {
    let scripts = crate::scripts::ScriptTable::get();
    table_of(py, |c| scripts.script(c))
}

/// Names of the scripts in the embedded Unicode table (index 0 is Common).
#[pyfunction]
fn script_names() -> Vec<String> {
    crate::scripts::ScriptTable::get().names().to_vec()
}

/// Panics inside the core, to test that a panic becomes a Python exception.
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    guard(|| -> Result<(), Error> { panic!("deliberate panic for the test suite") })
}

// forks: what Python's `os.register_at_fork` runs (registered when the module loads)

/// The locks held across a fork, by the thread that forks (see [`_before_fork`]).
type ForkHolds = (
    crate::threads::ForkHold,
    std::sync::MutexGuard<'static, Vec<Vec<crate::tokens::TokenId>>>,
);

thread_local! {
    static FORK_HOLDS: std::cell::RefCell<Option<ForkHolds>> = const { std::cell::RefCell::new(None) };
}

/// Before a fork: take the process-wide locks that threads working without the GIL hold for
/// a moment (the kept thread pools, the kept id buffers), so that the child does not inherit
/// one held by a thread it does not have.  Their holders never wait for the GIL, which the
/// forking thread holds, so this waits a moment at most.
#[pyfunction]
fn _before_fork() {
    let holds = (
        crate::threads::hold_for_fork(),
        crate::encode::batch::hold_for_fork(),
    );
    FORK_HOLDS.with(|h| *h.borrow_mut() = Some(holds));
}

/// After a fork, in the parent: let go of the locks.
#[pyfunction]
fn _after_fork_in_parent() {
    FORK_HOLDS.with(|h| drop(h.borrow_mut().take()));
}

/// After a fork, in the child: forget the parent's thread pools (their threads are not in the
/// child; the next parallel call starts new ones), then let go of the locks.
#[pyfunction]
fn _after_fork_in_child() {
    if let Some((pools, spare)) = FORK_HOLDS.with(|h| h.borrow_mut().take()) {
        pools.release_in_child();
        drop(spare);
    }
}

/// Register [`_before_fork`] and the two after-fork handlers with `os.register_at_fork`, so
/// that a child made by `os.fork` or a fork-mode `multiprocessing` pool gets working pools.
fn register_fork_handlers(m: &Bound<'_, pyo3::types::PyModule>) -> PyResult<()> {
    use pyo3::types::PyDict;
    let py = m.py();
    let os = py.import("os")?;
    if os.hasattr("register_at_fork")? {
        let handlers = PyDict::new(py);
        handlers.set_item("before", m.getattr("_before_fork")?)?;
        handlers.set_item("after_in_parent", m.getattr("_after_fork_in_parent")?)?;
        handlers.set_item("after_in_child", m.getattr("_after_fork_in_child")?)?;
        os.call_method("register_at_fork", (), Some(&handlers))?;
    }
    Ok(())
}

/// Version of the compiled core (must equal the Python package's `__version__`).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
mod _core {
    #[pymodule_export]
    use super::candidates::{
        candidates_files, candidates_iter, merge_candidates, merge_pairs, merge_segment_bytes,
        merge_segments, pairs_files, pairs_iter, segments_files, segments_iter, train_phase_one,
        PyCandidates, PyPairs, PyPhaseOne, PySegments,
    };
    #[pymodule_export]
    use super::counts::{count_files, count_iter, merge_counts, train_counts, PyCounts};
    #[pymodule_export]
    use super::extend::PyExtension;
    #[pymodule_export]
    use super::phase2::{split_segments, PyPhase2Driver, PyPhase2Part};
    #[pymodule_export]
    use super::{_after_fork_in_child, _after_fork_in_parent, _before_fork};
    #[pymodule_export]
    use super::{
        _panic_for_test, char_class_table, minbpe_train, pretokenize, script_names, script_table, train_docs,
        train_files, train_iter, version, PyMinbpeEncoder, PyTokenizer,
    };

    /// Registers the fork handlers with Python (see [`super::register_fork_handlers`]).
    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        super::register_fork_handlers(m)
    }
}
