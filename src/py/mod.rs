//! The Python seam: everything PyO3 lives here.  Thin wrappers that convert arguments, release
//! the GIL for all Rust work, and turn the core's errors (and panics) into Python exceptions.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyFileNotFoundError, PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyList};

use crate::encode::{Encode, Encoder};
use crate::error::Error;
use crate::input::{Documents, Files, BLOCK_BYTES};
use crate::minbpe::MinbpeEncoder;
use crate::model::{v2, Model};
use crate::pretokenize::{Matcher, Pretokenizer};
use crate::ranks::RankEncoder;
use crate::train::{Config, Control};

// ------------------------------------------------------------------------------------------
// errors

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Value(m) => PyValueError::new_err(m),
        Error::NotFound(m) => PyFileNotFoundError::new_err(m),
        Error::Io(m) => PyOSError::new_err(m),
        Error::Interrupted => PyKeyboardInterrupt::new_err("training interrupted"),
    }
}

/// Run `f` and turn a panic into a Python `RuntimeError` instead of aborting the interpreter.
fn guard<T>(f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(to_py),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in superword's Rust core (please report it): {msg}"
            )))
        }
    }
}

// ------------------------------------------------------------------------------------------
// progress and Ctrl-C

/// Reports progress to an optional Python callable (at most every 100 ms), and stops the work
/// when Ctrl-C is pressed or the callable raises.
///
/// Ctrl-C: Python runs signal handlers only on its main thread, and before this the training
/// ran inside `pool.install` on rayon's threads, so the interrupt came when training ended
/// (70 s later for a 200 MB line).  Now the work runs on a thread of its own
/// ([`PyControl::watch`]) and the calling thread checks for signals every 50 ms: the
/// KeyboardInterrupt is raised at once, and `stop` tells the abandoned work to end at its next
/// [`Control::progress`] (every 256 merges, every block of input) or, in the file reader,
/// before its next read.  Stages without checks (the candidates) finish first, in the
/// background, and their result is dropped.
struct PyControl {
    callback: Option<Py<PyAny>>,
    /// when and for which stage the last report went out
    last: Mutex<Option<(Instant, String)>>,
    /// an exception raised by the callback or by a signal handler, re-raised at the seam
    error: Mutex<Option<PyErr>>,
    /// raised with `error`: the work stops at its next check
    stop: Arc<AtomicBool>,
}

impl PyControl {
    fn new(callback: Option<Py<PyAny>>) -> PyControl {
        PyControl {
            callback,
            last: Mutex::new(None),
            error: Mutex::new(None),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    fn fail(&self, e: PyErr) -> Error {
        self.error.lock().unwrap().get_or_insert(e);
        self.stop.store(true, Ordering::SeqCst);
        Error::Interrupted
    }

    fn finish<T>(&self, r: PyResult<T>) -> PyResult<T> {
        match self.error.lock().unwrap().take() {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// Run `work` on a thread of its own while this one (Python's, with the GIL released)
    /// checks for signals every 50 ms.  On Ctrl-C this returns at once with the
    /// KeyboardInterrupt and raises `stop`; the abandoned work ends at its next check (it
    /// owns everything it uses) and its result is dropped.
    fn watch<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&PyControl) -> PyResult<T> + Send + 'static,
    ) -> PyResult<T> {
        let (sender, receiver) = std::sync::mpsc::channel();
        let control = self.clone();
        std::thread::Builder::new()
            .name("superword-train".into())
            .spawn(move || {
                let _ = sender.send(work(&control));
            })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the training thread: {e}")))?;
        loop {
            match receiver.recv_timeout(Duration::from_millis(50)) {
                Ok(out) => return out,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        self.fail(e);
                        return Err(PyKeyboardInterrupt::new_err("training interrupted"));
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(PyRuntimeError::new_err(
                        "internal error in superword's Rust core (please report it): the training thread ended without a result",
                    ))
                }
            }
        }
    }
}

impl Control for PyControl {
    fn progress(&self, stage: &str, done: u64, total: u64) -> Result<(), Error> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        let Some(callback) = &self.callback else {
            return Ok(());
        };
        {
            // report a new stage and a finished one at once, the rest at most every 100 ms
            let mut last = self.last.lock().unwrap();
            let now = Instant::now();
            if let Some((t, s)) = &*last {
                let finished = total > 0 && done >= total;
                if s == stage && !finished && now.duration_since(*t) < Duration::from_millis(100) {
                    return Ok(());
                }
            }
            *last = Some((now, stage.to_string()));
        }
        Python::attach(|py| callback.call1(py, (stage, done, total)).map(|_| ())).map_err(|e| self.fail(e))
    }
}

/// A rayon pool of `threads` workers, kept for reuse: starting threads for every
/// `encode_batch` call would cost more than small batches take.  `None` means the environment
/// variable `RAYON_NUM_THREADS`, else all cores (rayon's rule); a number above the available
/// cores is reduced to them.  At most [`POOLS_KEPT`] pools are kept (the least recently used
/// goes; its threads end when its last call returns), so a process that asks for many
/// different counts still holds at most that many pools' workers.
fn pool(threads: Option<usize>) -> PyResult<Arc<rayon::ThreadPool>> {
    const POOLS_KEPT: usize = 2;
    static POOLS: Mutex<Vec<(Option<usize>, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let key = match threads {
        Some(0) => {
            return Err(PyValueError::new_err(
                "threads must be at least 1 (or None for all cores)",
            ))
        }
        Some(n) => Some(n.min(cores)),
        None => None,
    };
    let mut pools = POOLS.lock().unwrap();
    if let Some(at) = pools.iter().position(|(k, _)| *k == key) {
        let entry = pools.remove(at);
        let p = entry.1.clone();
        pools.push(entry); // most recently used last
        return Ok(p);
    }
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = key {
        builder = builder.num_threads(n);
    }
    let p = builder
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start {threads:?} threads: {e}")))?;
    let p = Arc::new(p);
    if pools.len() >= POOLS_KEPT {
        pools.remove(0);
    }
    pools.push((key, p.clone()));
    Ok(p)
}

// ------------------------------------------------------------------------------------------
// training: the arguments become a `Config`, the input a stream of documents

/// A Python iterator of `str` as a stream of documents, read in batches of about 8 MB (the
/// GIL is taken only to read a batch).
struct PyDocuments {
    iter: Py<PyIterator>,
    /// where an exception raised by the iterator goes, to be re-raised at the seam
    control: Arc<PyControl>,
}

impl Documents for PyDocuments {
    fn for_each_batch(&mut self, f: &mut dyn FnMut(&[&str]) -> Result<(), Error>) -> Result<(), Error> {
        loop {
            if self.control.stop.load(Ordering::SeqCst) {
                return Err(Error::Interrupted);
            }
            let batch = Python::attach(|py| -> PyResult<Vec<String>> {
                let (mut batch, mut bytes) = (Vec::new(), 0);
                for item in self.iter.bind(py).clone() {
                    let doc: String = item?.extract()?;
                    bytes += doc.len();
                    batch.push(doc);
                    if bytes >= BLOCK_BYTES / 4 {
                        break;
                    }
                }
                Ok(batch)
            })
            .map_err(|e| self.control.fail(e))?;
            if batch.is_empty() {
                return Ok(());
            }
            let docs: Vec<&str> = batch.iter().map(String::as_str).collect();
            f(&docs)?;
        }
    }
}

/// Run the whole training on `threads` workers with the GIL released.
fn train(
    py: Python<'_>,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents + Send>,
    config: Config,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyTokenizer> {
    let pool = pool(threads)?;
    let control = Arc::new(PyControl::new(progress));
    let mut documents = documents(&control);
    let result = py.detach(|| {
        control.watch(move |control| {
            guard(|| {
                let mut stats = Vec::new();
                let model = crate::train::train(&mut *documents, &config, &pool, control, &mut stats)?;
                Ok((model, stats))
            })
        })
    });
    let (model, stats) = control.finish(result)?;
    PyTokenizer::from_model(py, model, None, stats)
}

/// Train on files (`.txt`, `.jsonl`, optionally `.gz`) read by the Rust core.
#[pyfunction]
#[pyo3(signature = (paths, *, text_field, vocab_size, algorithm, supermerges, pattern, script_pattern, scripts, greedy_split, tau, blowup, threads, progress))]
#[allow(clippy::too_many_arguments)]
fn train_files(
    py: Python<'_>,
    paths: Vec<String>,
    text_field: String,
    vocab_size: usize,
    algorithm: &str,
    supermerges: Option<usize>,
    pattern: &str,
    script_pattern: Option<String>,
    scripts: Option<Vec<String>>,
    greedy_split: bool,
    tau: f64,
    blowup: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyTokenizer> {
    let config = Config::new(
        vocab_size,
        algorithm,
        supermerges,
        pattern,
        script_pattern.as_deref(),
        scripts.as_deref(),
        greedy_split,
        crate::train::bpe::Picky { tau, blowup },
    )
    .map_err(to_py)?;
    train(
        py,
        |control| {
            Box::new(Files {
                paths,
                text_field,
                stop: Some(control.stop.clone()),
            })
        },
        config,
        threads,
        progress,
    )
}

/// Train on a Python iterator of `str` documents, read in batches.
#[pyfunction]
#[pyo3(signature = (documents, *, vocab_size, algorithm, supermerges, pattern, script_pattern, scripts, greedy_split, tau, blowup, threads, progress))]
#[allow(clippy::too_many_arguments)]
fn train_iter(
    py: Python<'_>,
    documents: Bound<'_, PyAny>,
    vocab_size: usize,
    algorithm: &str,
    supermerges: Option<usize>,
    pattern: &str,
    script_pattern: Option<String>,
    scripts: Option<Vec<String>>,
    greedy_split: bool,
    tau: f64,
    blowup: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyTokenizer> {
    let config = Config::new(
        vocab_size,
        algorithm,
        supermerges,
        pattern,
        script_pattern.as_deref(),
        scripts.as_deref(),
        greedy_split,
        crate::train::bpe::Picky { tau, blowup },
    )
    .map_err(to_py)?;
    let iter = PyIterator::from_object(&documents)?.unbind();
    train(
        py,
        |control| {
            Box::new(PyDocuments {
                iter,
                control: control.clone(),
            })
        },
        config,
        threads,
        progress,
    )
}

// ------------------------------------------------------------------------------------------
// the two tokenizer classes: shared methods written once

/// A `#[pymethods]` block for a tokenizer class holding an `encoder: impl Encode`: the methods
/// both classes share, then the class's own (`$own`).
macro_rules! tokenizer_methods {
    ($class:ty, { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            fn encode_ordinary(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
                let current = self.current();
                py.detach(|| guard(|| Encode::encode_ordinary(&current.encoder, text)))
            }

            fn encode(&self, py: Python<'_>, text: &str, allowed: Vec<String>) -> PyResult<Vec<u32>> {
                let current = self.current();
                py.detach(|| guard(|| Encode::encode(&current.encoder, text, &allowed)))
            }

            /// Encode many texts in parallel (GIL released); `threads=None` uses all cores.
            #[pyo3(signature = (texts, allowed, threads=None))]
            fn encode_batch<'py>(
                &self,
                py: Python<'py>,
                texts: Vec<String>,
                allowed: Vec<String>,
                threads: Option<usize>,
            ) -> PyResult<Bound<'py, PyList>> {
                let pool = pool(threads)?;
                let current = self.current();
                let batch = py.detach(|| {
                    guard(|| pool.install(|| current.encoder.encode_batch_groups(&strs(&texts), &allowed)))
                })?;
                id_lists(py, &batch)
            }

            /// `encode_batch` as two little-endian buffers: all ids (u32), and `len(texts) + 1`
            /// offsets (u64) into them; no Python object per token.  The ids are written
            /// straight into the returned bytes, in parallel, with the GIL released.
            #[pyo3(signature = (texts, allowed, threads=None))]
            fn encode_batch_flat<'py>(
                &self,
                py: Python<'py>,
                texts: Vec<String>,
                allowed: Vec<String>,
                threads: Option<usize>,
            ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
                let pool = pool(threads)?;
                let current = self.current();
                let batch = py.detach(|| {
                    guard(|| pool.install(|| current.encoder.encode_batch_groups(&strs(&texts), &allowed)))
                })?;
                let ids = PyBytes::new_with(py, 4 * batch.total_ids(), |buf| {
                    py.detach(|| pool.install(|| batch.write_ids_le(buf)));
                    Ok(())
                })?;
                let offsets = PyBytes::new_with(py, 8 * (batch.len() + 1), |buf| {
                    batch.write_offsets_le(buf);
                    Ok(())
                })?;
                Ok((ids, offsets))
            }

            fn encode_to_tokens<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Vec<Bound<'py, PyBytes>>> {
                let current = self.current();
                let ids = py.detach(|| guard(|| Encode::encode_ordinary(&current.encoder, text)))?;
                Ok(ids.iter().map(|&i| PyBytes::new(py, current.encoder.token(i))).collect())
            }

            fn decode_bytes<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyBytes>> {
                let current = self.current();
                let b = py.detach(|| guard(|| Encode::decode_bytes(&current.encoder, &ids)))?;
                Ok(PyBytes::new(py, &b))
            }

            fn token_bytes<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyBytes>> {
                let b = Encode::decode_bytes(&self.current().encoder, &[id]).map_err(to_py)?;
                Ok(PyBytes::new(py, &b))
            }

            $($own)*
        }
    };
}

fn strs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

/// Python ints for small ids, made once and shared by every list of ids: a list then costs a
/// reference count per id instead of an allocation (making the ints was most of the time a
/// one-list-per-text `encode_batch` spent holding the GIL).  Ints are immutable, so sharing
/// them is invisible.  At most `2**18` of them (ids of the largest common vocabularies),
/// made when a batch has at least as many ids as the ints it needs.
static SMALL_INTS: Mutex<Vec<Py<PyAny>>> = Mutex::new(Vec::new());

/// One Python list of ids per text of `batch`.
fn id_lists<'py>(py: Python<'py>, batch: &crate::encode::batch::Batch) -> PyResult<Bound<'py, PyList>> {
    const MOST: usize = 1 << 18;
    // never wait for the lock while holding the GIL (whoever holds it may need the GIL); a
    // call that finds it taken makes its own ints
    let mut guard = SMALL_INTS.try_lock().ok();
    if let Some(ints) = guard.as_deref_mut() {
        let want = py
            .detach(|| batch.max_id())
            .map_or(0, |m| m as usize + 1)
            .min(MOST);
        if want > ints.len() && batch.total_ids() >= want {
            for i in ints.len()..want {
                ints.push(i.into_pyobject(py)?.into_any().unbind());
            }
        }
    }
    let ints: &[Py<PyAny>] = guard.as_deref().map_or(&[], |v| v.as_slice());
    let one = |id: u32| -> PyResult<Bound<'py, PyAny>> {
        match ints.get(id as usize) {
            Some(int) => Ok(int.bind(py).clone()),
            None => Ok(id.into_pyobject(py)?.into_any()),
        }
    };
    let lists = batch
        .texts()
        .map(|ids| PyList::new(py, ids.iter().map(|&id| one(id)).collect::<PyResult<Vec<_>>>()?))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, lists)
}

fn dict<'py, K: IntoPyObject<'py> + Copy, V: IntoPyObject<'py> + Copy>(
    py: Python<'py>,
    items: &[(K, V)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for &(k, v) in items {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// A tokenizer's state, shared by the calls that use it.  Registering special tokens builds a
/// new state and swaps it in; calls already running (with the GIL released, on any thread)
/// finish with the state they started with, so registering never waits for them nor fails
/// because of them.
struct Shared<T>(RwLock<Arc<T>>);

impl<T> Shared<T> {
    fn new(value: T) -> Shared<T> {
        Shared(RwLock::new(Arc::new(value)))
    }

    fn get(&self) -> Arc<T> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replace the state by `f(current)`; one update at a time.
    fn update(&self, f: impl FnOnce(&T) -> Result<T, Error>) -> Result<(), Error> {
        let mut slot = self.0.write().unwrap_or_else(|e| e.into_inner());
        let next = f(&slot)?;
        *slot = Arc::new(next);
        Ok(())
    }
}

struct TokenizerState {
    model: Model,
    encoder: Encoder,
    greedy_split: bool,
}

/// A trained or loaded model with its encoder.
#[pyclass(name = "Tokenizer", module = "superword._core")]
pub struct PyTokenizer {
    state: Shared<TokenizerState>,
    stats: Vec<(&'static str, f64)>,
}

impl PyTokenizer {
    fn from_model(
        py: Python<'_>,
        model: Model,
        greedy_split: Option<bool>,
        stats: Vec<(&'static str, f64)>,
    ) -> PyResult<Self> {
        // the paper's encoding unless the greedy split is asked for (SPEC 3.1)
        let greedy_split = greedy_split.unwrap_or(false);
        let encoder = py.detach(|| guard(|| Encoder::new(&model, greedy_split)))?;
        Ok(PyTokenizer {
            state: Shared::new(TokenizerState {
                model,
                encoder,
                greedy_split,
            }),
            stats,
        })
    }

    fn current(&self) -> Arc<TokenizerState> {
        self.state.get()
    }
}

tokenizer_methods!(PyTokenizer, {
    /// Load a "BoundlessBPE v2" model file.
    #[staticmethod]
    #[pyo3(signature = (path, greedy_split=None))]
    fn load(py: Python<'_>, path: String, greedy_split: Option<bool>) -> PyResult<Self> {
        let mut model = py.detach(|| guard(|| v2::read(&path)))?;
        // the n-gram table lives in a sidecar (SPEC 3.1); a table inside an old model file
        // is used only when there is no sidecar
        let sidecar = v2::ngrams_path(&path);
        if greedy_split == Some(true) && (model.ngrams.is_none() || std::path::Path::new(&sidecar).exists()) {
            model.ngrams = Some(py.detach(|| guard(|| v2::read_ngrams(&path)))?);
        }
        PyTokenizer::from_model(py, model, greedy_split, Vec::new())
    }

    /// The n-gram sidecar's text of a model trained with the greedy split (`None` without one);
    /// `Tokenizer.save` writes both files through `superword/_files.py`.
    fn dumps_ngrams(&self) -> Option<String> {
        self.current().model.ngrams.as_deref().map(v2::dumps_ngrams)
    }

    /// The model file's text.
    fn dumps(&self) -> String {
        v2::dumps(&self.current().model)
    }

    /// Write the vocabulary as a `.tiktoken` ranks file (plain BPE models in simple mode only).
    fn save_tiktoken(&self, py: Python<'_>, path: String) -> PyResult<()> {
        let text = crate::ranks::dumps_model(&self.current().model).map_err(to_py)?;
        py.detach(|| guard(|| v2::write_atomic(&path, &text)))
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.current().model.kind.name()
    }

    /// The pre-tokenization pattern (the main one).
    #[getter]
    fn pattern(&self) -> String {
        self.current().model.settings.main_regex.clone()
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.current().model.vocab_size()
    }

    #[getter]
    fn num_supermerges(&self) -> usize {
        self.current().model.supermerges.len()
    }

    #[getter]
    fn num_merges(&self) -> usize {
        self.current().model.merges.len()
    }

    #[getter]
    fn special_tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let current = self.current();
        let items: Vec<(&str, u32)> = current
            .model
            .special_tokens
            .iter()
            .map(|(s, i)| (s.as_str(), *i))
            .collect();
        dict(py, &items)
    }

    #[getter]
    fn training_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.stats)
    }

    fn is_superword(&self, id: i64) -> PyResult<bool> {
        self.current().model.is_superword(id).map_err(to_py)
    }

    /// (id, bytes, is_superword) for every regular and superword token.
    fn vocab_items<'py>(&self, py: Python<'py>) -> Vec<(usize, Bound<'py, PyBytes>, bool)> {
        let current = self.current();
        let m = &current.model;
        m.vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (i, PyBytes::new(py, t), m.is_super[i]))
            .collect()
    }

    /// Add special tokens with the next free ids (the caller validated them); safe while
    /// other threads encode (see [`Shared`]).
    fn register_special_tokens(&self, py: Python<'_>, tokens: Vec<String>) -> PyResult<()> {
        py.detach(|| {
            guard(|| {
                self.state.update(|s| {
                    let mut model = s.model.clone();
                    if let Some(t) = tokens
                        .iter()
                        .find(|t| model.special_tokens.iter().any(|(s, _)| s == *t))
                    {
                        return Err(Error::Value(format!("special token {t:?} is already registered")));
                    }
                    model.add_special_tokens(tokens);
                    let encoder = Encoder::new(&model, s.greedy_split)?;
                    Ok(TokenizerState {
                        model,
                        encoder,
                        greedy_split: s.greedy_split,
                    })
                })
            })
        })
    }

    /// The id of a token given by its bytes, if any.
    fn id_of(&self, token: &[u8]) -> Option<u32> {
        self.current().encoder.id_of(token)
    }

    fn __repr__(&self) -> String {
        let current = self.current();
        format!(
            "<superword._core.Tokenizer {}: {} ids>",
            current.model.kind.name(),
            current.model.vocab_size()
        )
    }
});

/// A tokenizer from a `.tiktoken` ranks file, encoding exactly as tiktoken does.
#[pyclass(name = "RankTokenizer", module = "superword._core")]
pub struct PyRankTokenizer {
    state: Shared<RankState>,
}

struct RankState {
    encoder: RankEncoder,
}

impl PyRankTokenizer {
    fn current(&self) -> Arc<RankState> {
        self.state.get()
    }
}

tokenizer_methods!(PyRankTokenizer, {
    /// Read a `.tiktoken` file; `special_tokens` maps each special string to its id.
    #[staticmethod]
    fn load(
        py: Python<'_>,
        path: String,
        pattern: String,
        special_tokens: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let encoder = py.detach(|| guard(|| RankEncoder::load(&path, pattern, special_tokens)))?;
        Ok(PyRankTokenizer {
            state: Shared::new(RankState { encoder }),
        })
    }

    fn save(&self, path: String) -> PyResult<()> {
        let _ = path;
        Err(PyValueError::new_err(
            "a tiktoken ranks model has no BoundlessBPE v2 form; use save_tiktoken",
        ))
    }

    fn dumps(&self) -> PyResult<String> {
        Err(PyValueError::new_err(
            "a tiktoken ranks model has no BoundlessBPE v2 form",
        ))
    }

    fn save_tiktoken(&self, py: Python<'_>, path: String) -> PyResult<()> {
        let current = self.current();
        let text = crate::ranks::dumps(current.encoder.items());
        py.detach(|| guard(|| v2::write_atomic(&path, &text)))
    }

    #[getter]
    fn kind(&self) -> &'static str {
        "tiktoken"
    }

    #[getter]
    fn pattern(&self) -> String {
        self.current().encoder.model.pattern.clone()
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.current().encoder.vocab_size()
    }

    #[getter]
    fn num_supermerges(&self) -> usize {
        0
    }

    #[getter]
    fn special_tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let current = self.current();
        let items: Vec<(&str, u32)> = current
            .encoder
            .model
            .special
            .iter()
            .map(|(s, i)| (s.as_str(), *i))
            .collect();
        dict(py, &items)
    }

    #[getter]
    fn training_stats<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        PyDict::new(py)
    }

    fn is_superword(&self, id: i64) -> PyResult<bool> {
        self.current()
            .encoder
            .decode_bytes(&[id])
            .map(|_| false)
            .map_err(to_py)
    }

    fn id_of(&self, token: &[u8]) -> Option<u32> {
        self.current().encoder.model.ranks.get(token).copied()
    }

    fn vocab_items<'py>(&self, py: Python<'py>) -> Vec<(u32, Bound<'py, PyBytes>, bool)> {
        let current = self.current();
        current
            .encoder
            .items()
            .into_iter()
            .map(|(i, t)| (i, PyBytes::new(py, t), false))
            .collect()
    }

    /// Add special tokens with the next free ids; safe while other threads encode.
    fn register_special_tokens(&self, py: Python<'_>, tokens: Vec<String>) -> PyResult<()> {
        py.detach(|| {
            guard(|| {
                self.state.update(|s| {
                    let mut model = s.encoder.model.clone();
                    for t in tokens {
                        if model.special.iter().any(|(s, _)| *s == t) {
                            return Err(Error::Value(format!("special token {t:?} is already registered")));
                        }
                        let id = model
                            .vocab
                            .keys()
                            .chain(model.special.iter().map(|(_, i)| i))
                            .max()
                            .map_or(1, |m| m + 1);
                        model.special.push((t, id));
                    }
                    Ok(RankState {
                        encoder: RankEncoder::new(model)?,
                    })
                })
            })
        })
    }
});

// ------------------------------------------------------------------------------------------
// minbpe

/// One minbpe merge for Python: `(left, right, id, count, round)`.
type MergeRow = (u32, u32, u32, u64, u32);

/// Train minbpe-style (SPEC 6) on `text`: one chunk (`pattern=None`, BasicTokenizer) or the
/// pattern's findall chunks.  Returns `(left, right, id, count, round)` per merge.
#[pyfunction]
#[pyo3(signature = (text, num_merges, pattern, batch_size, on_merge=None))]
fn minbpe_train(
    py: Python<'_>,
    text: &str,
    num_merges: usize,
    pattern: Option<String>,
    batch_size: usize,
    on_merge: Option<Py<PyAny>>,
) -> PyResult<Vec<MergeRow>> {
    let matcher = pattern
        .as_deref()
        .map(|p| Matcher::new(p, "pattern"))
        .transpose()
        .map_err(to_py)?;
    let control = Arc::new(PyControl::new(None));
    let text = text.to_string(); // owned: the work may outlive this call after Ctrl-C
    let result = py.detach(|| {
        control.watch(move |control| {
            guard(|| {
                let chunks = crate::minbpe::distinct_chunks(&text, matcher.as_ref())?;
                crate::minbpe::train(&chunks, num_merges, batch_size, control, |m| match &on_merge {
                    _ if control.stop.load(Ordering::SeqCst) => Err(Error::Interrupted),
                    Some(cb) => Python::attach(|py| {
                        cb.call1(py, (m.pair.0, m.pair.1, m.id, m.count))
                            .map(|_| ())
                            .map_err(|e| control.fail(e))
                    }),
                    None => Ok(()),
                })
            })
        })
    });
    let merges = control.finish(result)?;
    Ok(merges
        .into_iter()
        .map(|m| (m.pair.0, m.pair.1, m.id, m.count, m.round))
        .collect())
}

/// minbpe's encoder: merges by smallest id within each chunk (the whole text without a pattern).
#[pyclass(name = "MinbpeEncoder", module = "superword._core")]
pub struct PyMinbpeEncoder(MinbpeEncoder);

#[pymethods]
impl PyMinbpeEncoder {
    #[new]
    #[pyo3(signature = (merges, pattern=None))]
    fn new(merges: Vec<((u32, u32), u32)>, pattern: Option<String>) -> PyResult<Self> {
        Ok(PyMinbpeEncoder(
            MinbpeEncoder::new(merges, pattern.as_deref()).map_err(to_py)?,
        ))
    }

    fn encode_ordinary(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        py.detach(|| guard(|| self.0.encode_ordinary(text)))
    }
}

// ------------------------------------------------------------------------------------------
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
    let pre = Pretokenizer::new(pattern, script_pattern.as_deref(), scripts.as_deref()).map_err(to_py)?;
    py.detach(|| {
        guard(|| {
            pre.pieces(text)
                .map(|v| v.into_iter().map(str::to_string).collect())
        })
    })
}

/// The class bits (classes.txt) of every code point, as 0x110000 bytes.
#[pyfunction]
fn char_class_table<'py>(py: Python<'py>) -> Bound<'py, PyBytes> {
    let table: Vec<u8> = (0..0x110000u32)
        .map(|cp| char::from_u32(cp).map_or(0, crate::pretokenize::classes::bits))
        .collect();
    PyBytes::new(py, &table)
}

/// The script index of every code point (surrogates: Common), as 0x110000 bytes.
#[pyfunction]
fn script_table<'py>(py: Python<'py>) -> Bound<'py, PyBytes> {
    let t = crate::scripts::ScriptTable::get();
    let table: Vec<u8> = (0..0x110000u32)
        .map(|cp| char::from_u32(cp).map_or(0, |c| t.script(c)))
        .collect();
    PyBytes::new(py, &table)
}

/// Panics inside the core, to test that a panic becomes a Python exception.
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    guard(|| -> Result<(), Error> { panic!("deliberate panic for the test suite") })
}

/// Version of the compiled core (must equal the Python package's `__version__`).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Names of the scripts in the embedded Unicode table (index 0 is Common).
#[pyfunction]
fn script_names() -> Vec<String> {
    crate::scripts::ScriptTable::get().names().to_vec()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(script_names, m)?)?;
    m.add_function(wrap_pyfunction!(script_table, m)?)?;
    m.add_function(wrap_pyfunction!(char_class_table, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(train_files, m)?)?;
    m.add_function(wrap_pyfunction!(train_iter, m)?)?;
    m.add_class::<PyTokenizer>()?;
    m.add_class::<PyRankTokenizer>()?;
    m.add_class::<PyMinbpeEncoder>()?;
    m.add_function(wrap_pyfunction!(minbpe_train, m)?)?;
    Ok(())
}
