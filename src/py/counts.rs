//! The seam for count files (`superword.count`, `load_counts`, `merge_counts`,
//! `train(counts=...)`): convert, call the core with the GIL released, convert back.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator};

use super::{guard, pool, to_py, PyControl, PyDocuments, PyTokenizer};
use crate::count::count_documents;
use crate::countfile::{CountSettings, CountTable};
use crate::error::Error;
use crate::input::{Documents, Files};
use crate::pretokenize::{Pretokenizer, MERGE_PATTERN};
use crate::train::bpe::Picky;
use crate::train::{train_counts as train_from, Config};

/// Counted pretokens and letter runs with their pre-tokenization settings (immutable).
#[pyclass(name = "Counts", module = "superword._core", frozen)]
pub struct PyCounts {
    table: Arc<CountTable>,
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
        let table = py.detach(|| {
            guard(|| {
                let data = std::fs::read(&path).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Error::NotFound(format!("count file not found: {path}")),
                    _ => Error::Io(format!("{path}: cannot be read ({e})")),
                })?;
                CountTable::from_bytes(&data).map_err(|e| Error::Value(format!("{path}: {e}")))
            })
        })?;
        Ok(PyCounts::new(table))
    }

    /// Parse a count file's bytes (errors name `name`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8], name: &str) -> PyResult<PyCounts> {
        let table = py.detach(|| {
            guard(|| CountTable::from_bytes(data).map_err(|e| Error::Value(format!("{name}: {e}"))))
        })?;
        Ok(PyCounts::new(table))
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
fn merge_counts(py: Python<'_>, tables: Vec<PyRef<'_, PyCounts>>, names: Vec<String>) -> PyResult<PyCounts> {
    let tables: Vec<Arc<CountTable>> = tables.iter().map(|t| t.table.clone()).collect();
    let merged = py.detach(|| {
        guard(|| {
            let refs: Vec<&CountTable> = tables.iter().map(|t| &**t).collect();
            CountTable::merge(&refs, &names)
        })
    })?;
    Ok(PyCounts::new(merged))
}

/// Stage 1 alone on `threads` workers, with the GIL released.
fn count(
    py: Python<'_>,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents + Send>,
    settings: (&str, Option<String>, Option<Vec<String>>, bool),
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyCounts> {
    let (pattern, script_pattern, scripts, runs) = settings;
    let pretokenizer =
        Pretokenizer::new(pattern, script_pattern.as_deref(), scripts.as_deref()).map_err(to_py)?;
    let settings = CountSettings {
        pattern: pattern.to_string(),
        script_pattern,
        scripts: pretokenizer.scripts.clone(),
        merge_pattern: MERGE_PATTERN.to_string(),
        with_runs: runs,
    };
    let pool = pool(threads)?;
    let control = Arc::new(PyControl::new(progress));
    let mut documents = documents(&control);
    let result = py.detach(|| {
        control.watch(move |control| {
            guard(|| {
                let counts = count_documents(&mut *documents, &pretokenizer, runs, &pool, control)?;
                pool.install(|| CountTable::from_counts(counts, settings))
            })
        })
    });
    Ok(PyCounts::new(control.finish(result)?))
}

/// Count files (`.txt`, `.jsonl`, optionally `.gz`) read by the Rust core.
#[pyfunction]
#[pyo3(signature = (paths, *, text_field, pattern, script_pattern, scripts, runs, threads, progress))]
#[allow(clippy::too_many_arguments)]
fn count_files(
    py: Python<'_>,
    paths: Vec<String>,
    text_field: String,
    pattern: &str,
    script_pattern: Option<String>,
    scripts: Option<Vec<String>>,
    runs: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyCounts> {
    count(
        py,
        |control| {
            Box::new(Files {
                paths,
                text_field,
                stop: Some(control.stop.clone()),
            })
        },
        (pattern, script_pattern, scripts, runs),
        threads,
        progress,
    )
}

/// Count a Python iterator of `str` documents, read in batches.
#[pyfunction]
#[pyo3(signature = (documents, *, pattern, script_pattern, scripts, runs, threads, progress))]
#[allow(clippy::too_many_arguments)]
fn count_iter(
    py: Python<'_>,
    documents: Bound<'_, PyAny>,
    pattern: &str,
    script_pattern: Option<String>,
    scripts: Option<Vec<String>>,
    runs: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyCounts> {
    let iter = PyIterator::from_object(&documents)?.unbind();
    count(
        py,
        |control| {
            Box::new(PyDocuments {
                iter,
                control: control.clone(),
            })
        },
        (pattern, script_pattern, scripts, runs),
        threads,
        progress,
    )
}

/// Train on counts: stages 2 to 4 with the counts' pre-tokenization settings.
#[pyfunction]
#[pyo3(signature = (counts, *, vocab_size, algorithm, supermerges, greedy_split, tau, blowup, threads, progress))]
#[allow(clippy::too_many_arguments)]
fn train_counts(
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
    let s = &table.settings;
    let config = Config::new(
        vocab_size,
        algorithm,
        supermerges,
        &s.pattern,
        s.script_pattern.as_deref(),
        s.scripts.as_deref(),
        greedy_split,
        Picky { tau, blowup },
    )
    .map_err(to_py)?;
    let with_runs = algorithm != "bpe";
    let pool = pool(threads)?;
    let control = Arc::new(PyControl::new(progress));
    let result = py.detach(|| {
        control.watch(move |control| {
            guard(|| {
                let mut stats = Vec::new();
                let counts = table.to_counts(with_runs);
                let model = train_from(counts, &config, &pool, control, &mut stats)?;
                Ok((model, stats))
            })
        })
    });
    let (model, stats) = control.finish(result)?;
    PyTokenizer::from_model(py, model, None, stats)
}

/// Register the count-file functions and class in the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCounts>()?;
    m.add_function(wrap_pyfunction!(merge_counts, m)?)?;
    m.add_function(wrap_pyfunction!(count_files, m)?)?;
    m.add_function(wrap_pyfunction!(count_iter, m)?)?;
    m.add_function(wrap_pyfunction!(train_counts, m)?)?;
    Ok(())
}
