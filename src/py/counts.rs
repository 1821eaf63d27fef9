//! The seam for count files (`superword.count`, `load_counts`, `merge_counts`,
//! `train(counts=...)`): convert, call the core with the GIL released, convert back.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator};

use super::tokenizer::PyTokenizer;
use super::{files, guard, iterated, watched, watched_on, PyControl};
use crate::count::count_documents;
use crate::countfile::{CountSettings, CountTable};
use crate::input::Documents;
use crate::pretokenize::{Pretokenizer, MERGE_PATTERN};
use crate::threads::pool;
use crate::tokenizer::Tokenizer;
use crate::train::bpe::Picky;
use crate::train::{train_counts as train_from, Config};

/// Counted pretokens and letter runs with their pre-tokenization settings (immutable).
#[pyclass(name = "Counts", module = "superword._core", frozen)]
pub struct PyCounts {
    pub(super) table: Arc<CountTable>,
}

impl PyCounts {
    fn new(table: CountTable) -> PyCounts {
        PyCounts {
            table: Arc::new(table),
        }
    }
}

#[pymethods]
impl PyCounts {
    /// Read a count file; errors name `path`.
    #[staticmethod]
    fn load(py: Python<'_>, path: String) -> PyResult<PyCounts> {
        Ok(PyCounts::new(py.detach(|| guard(|| CountTable::load(&path)))?))
    }

    /// Parse a count file's bytes (errors name `name`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8], name: &str) -> PyResult<PyCounts> {
        Ok(PyCounts::new(
            py.detach(|| guard(|| CountTable::parse(data, name)))?,
        ))
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let table = self.table.clone();
        let data = py.detach(|| guard(|| Ok(table.to_bytes())))?;
        Ok(PyBytes::new(py, &data))
    }

    #[getter]
    fn pattern(&self) -> String {
        self.table.settings.pattern.clone()
    }

    #[getter]
    fn script_pattern(&self) -> Option<String> {
        self.table.settings.script_pattern.clone()
    }

    #[getter]
    fn scripts(&self) -> Option<Vec<String>> {
        self.table.settings.scripts.clone()
    }

    #[getter]
    fn merge_pattern(&self) -> String {
        self.table.settings.merge_pattern.clone()
    }

    #[getter]
    fn with_runs(&self) -> bool {
        self.table.settings.with_runs
    }

    #[getter]
    fn documents(&self) -> u64 {
        self.table.documents
    }

    #[getter]
    fn pretokens(&self) -> u64 {
        self.table.pretokens
    }

    #[getter]
    fn num_words(&self) -> usize {
        self.table.words.len()
    }

    #[getter]
    fn num_runs(&self) -> usize {
        self.table.runs.len()
    }

    /// The `n` most frequent pretokens (all when `None`), most frequent first.
    #[pyo3(signature = (n=None))]
    fn most_common(&self, n: Option<usize>) -> Vec<(String, u64)> {
        let words = &self.table.words;
        words[..n.unwrap_or(words.len()).min(words.len())]
            .iter()
            .map(|(w, c)| (w.to_string(), *c))
            .collect()
    }

    /// The runs as tuples of pretokens, in file order.
    fn runs(&self) -> Vec<(Vec<String>, u64)> {
        let words = &self.table.words;
        self.table
            .runs
            .iter()
            .map(|(run, c)| (run.iter().map(|&i| words[i as usize].0.to_string()).collect(), *c))
            .collect()
    }

    fn prune(&self, py: Python<'_>, min_count: u64) -> PyResult<PyCounts> {
        let table = self.table.clone();
        Ok(PyCounts::new(py.detach(|| guard(|| Ok(table.prune(min_count))))?))
    }
}

/// The sum of count tables (`names` name them in errors).
#[pyfunction]
pub(crate) fn merge_counts(
    py: Python<'_>,
    tables: Vec<PyRef<'_, PyCounts>>,
    names: Vec<String>,
) -> PyResult<PyCounts> {
    let tables: Vec<Arc<CountTable>> = tables.iter().map(|t| t.table.clone()).collect();
    let merged = py.detach(|| {
        guard(|| {
            let refs: Vec<&CountTable> = tables.iter().map(|t| &**t).collect();
            CountTable::merge(&refs, &names)
        })
    })?;
    Ok(PyCounts::new(merged))
}

/// What to count with: the arguments of `superword.count` after its checks.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct CountOptions {
    pattern: String,
    script_pattern: Option<String>,
    scripts: Option<Vec<String>>,
    runs: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
}

/// Stage 1 alone on `threads` workers, with the GIL released.
fn count(
    py: Python<'_>,
    options: CountOptions,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents> + Send + 'static,
) -> PyResult<PyCounts> {
    let CountOptions {
        pattern,
        script_pattern,
        scripts,
        runs,
        threads,
        progress,
    } = options;
    let pretokenizer = Pretokenizer::new(&pattern, script_pattern.as_deref(), scripts.as_deref())?;
    let settings = CountSettings {
        pattern,
        script_pattern,
        scripts: pretokenizer.scripts.clone(),
        merge_pattern: MERGE_PATTERN.to_string(),
        with_runs: runs,
    };
    let pool = pool(threads)?;
    let table = watched(py, progress, move |control| {
        let counts = count_documents(&mut *documents(control), &pretokenizer, runs, &pool, &**control)?;
        pool.install(|| CountTable::from_counts(counts, settings))
    })?;
    Ok(PyCounts::new(table))
}

/// Count files (`.txt`, `.jsonl`, optionally `.gz`) read by the Rust core.
#[pyfunction]
pub(crate) fn count_files(
    py: Python<'_>,
    paths: Vec<String>,
    text_field: String,
    options: CountOptions,
) -> PyResult<PyCounts> {
    count(py, options, move |control| files(paths, text_field, control))
}

/// Count a Python iterator of `str` documents, read in batches.
#[pyfunction]
pub(crate) fn count_iter(
    py: Python<'_>,
    documents: Bound<'_, PyAny>,
    options: CountOptions,
) -> PyResult<PyCounts> {
    let iter = PyIterator::from_object(&documents)?.unbind();
    count(py, options, move |control| iterated(iter, control, None))
}

/// A training configuration on counted text: the counts' pre-tokenization settings, with the
/// algorithm's own options (for training on counts, and for phase 1 of two passes).
pub(super) fn config_for(
    s: &CountSettings,
    vocab_size: usize,
    algorithm: &str,
    supermerges: Option<usize>,
    greedy_split: bool,
    picky: Picky,
) -> PyResult<Config> {
    Ok(Config::new(
        vocab_size,
        algorithm,
        supermerges,
        &s.pattern,
        s.script_pattern.as_deref(),
        s.scripts.as_deref(),
        greedy_split,
        picky,
    )?)
}

/// Train on counts: stages 2 to 4 with the counts' pre-tokenization settings.
#[pyfunction]
#[pyo3(signature = (counts, *, vocab_size, algorithm, supermerges, greedy_split, tau, blowup, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn train_counts(
    py: Python<'_>,
    counts: PyRef<'_, PyCounts>,
    vocab_size: usize,
    algorithm: &str,
    supermerges: Option<usize>,
    greedy_split: bool,
    tau: f64,
    blowup: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyTokenizer> {
    let table = counts.table.clone();
    let config = config_for(
        &table.settings,
        vocab_size,
        algorithm,
        supermerges,
        greedy_split,
        Picky { tau, blowup },
    )?;
    let with_runs = algorithm != "bpe";
    let pool = pool(threads)?;
    let on = pool.clone();
    let (tokenizer, stats) = watched_on(Some(&on), py, progress, move |control| {
        let mut stats = Vec::new();
        let model = train_from(table.to_counts(with_runs), &config, &pool, &**control, &mut stats)?;
        // the paper's encoding, without the greedy split (SPEC 3.1)
        Ok((Tokenizer::trained(model), stats))
    })?;
    Ok(PyTokenizer::new(tokenizer, stats))
}
