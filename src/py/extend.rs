//! The seam for extension models (`train(..., base=...)`, SPEC 10): convert, call
//! `crate::extend` with the GIL released, convert back.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{IntoPyDict, PyBytes, PyDict, PyList};

use super::counts::PyCounts;
use super::tokenizer::ids_of;
use super::{guard, watched_on};
use crate::encode::Encode;
use crate::error::Error;
use crate::extend::{self, ExtensionEncoder};
use crate::threads::pool;
use crate::tokenizer::Shared;
use crate::train::Stats;

/// A base ranks model with supermerges (the twin of `_extend.ReferenceExtensionCore`).
#[pyclass(name = "ExtensionTokenizer", module = "superword._core", frozen)]
pub struct PyExtension {
    state: Shared<ExtensionEncoder>,
    stats: Stats,
}

impl PyExtension {
    fn new(encoder: ExtensionEncoder, stats: Stats) -> PyExtension {
        PyExtension {
            state: Shared::new(encoder),
            stats,
        }
    }

    fn current(&self) -> Arc<ExtensionEncoder> {
        self.state.get()
    }
}

fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, ids)
}

#[pymethods]
impl PyExtension {
    /// Parse and check a model file's text (errors name `name` and the line).
    #[staticmethod]
    #[pyo3(signature = (text, name="<model text>".to_string()))]
    fn loads(py: Python<'_>, text: String, name: String) -> PyResult<Self> {
        let encoder = py.detach(|| guard(|| ExtensionEncoder::new(extend::loads(&text, &name)?)))?;
        Ok(PyExtension::new(encoder, Vec::new()))
    }

    /// Learn `n` supermerges over the base (its `.tiktoken` text, pattern and special tokens)
    /// from counts made with the base's pattern.
    #[staticmethod]
    #[pyo3(signature = (counts, ranks, pattern, special_tokens, n, threads=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn train(
        py: Python<'_>,
        counts: PyRef<'_, PyCounts>,
        ranks: String,
        pattern: String,
        special_tokens: Vec<(String, u32)>,
        n: usize,
        threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let table = counts.table.clone();
        let pool = pool(threads)?;
        let on = pool.clone();
        let (encoder, stats) = watched_on(Some(&on), py, progress, move |control| {
            let clock = std::time::Instant::now();
            let parsed = crate::ranks::parse(&ranks, "the base")?;
            let mut base: Vec<(u32, Vec<u8>)> = parsed.vocab.into_iter().collect();
            base.sort_unstable_by_key(|(i, _)| *i);
            let ext = pool.install(|| {
                extend::train(
                    table.to_counts(true),
                    base,
                    pattern,
                    special_tokens,
                    n,
                    &**control,
                )
            })?;
            let stats: Stats = vec![("phase2", clock.elapsed().as_secs_f64())];
            Ok((ExtensionEncoder::new(ext)?, stats))
        })?;
        Ok(PyExtension::new(encoder, stats))
    }

    /// SPEC 10.6: `n` supermerges over one of our word models (its model file's text), from
    /// counts made with its settings; returns the SuperBPE model's text and phase 2's seconds.
    #[staticmethod]
    #[pyo3(signature = (counts, word_model, n, threads=None, progress=None))]
    fn extend_word_model(
        py: Python<'_>,
        counts: PyRef<'_, PyCounts>,
        word_model: String,
        n: usize,
        threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(String, f64)> {
        let table = counts.table.clone();
        let pool = pool(threads)?;
        let on = pool.clone();
        watched_on(Some(&on), py, progress, move |control| {
            let clock = std::time::Instant::now();
            let word = crate::model::v2::loads(&word_model, "the base")?;
            let model =
                pool.install(|| extend::extend_word_model(table.to_counts(true), word, n, &**control))?;
            Ok((crate::model::v2::dumps(&model), clock.elapsed().as_secs_f64()))
        })
    }

    #[getter]
    fn kind(&self) -> &'static str {
        "extension"
    }

    #[getter]
    fn greedy_split(&self) -> bool {
        false
    }

    #[getter]
    fn pattern(&self) -> String {
        self.current().ext.pattern.clone()
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.current().vocab_size()
    }

    #[getter]
    fn num_supermerges(&self) -> usize {
        self.current().ext.supermerges.len()
    }

    /// The first superword's id: every id below it is the base's.
    #[getter]
    fn base_vocab_size(&self) -> u64 {
        self.current().ext.base_end()
    }

    #[getter]
    fn special_tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.current().ext.special.clone().into_py_dict(py)
    }

    /// The special tokens with ids below the superwords' (the base's own).
    fn base_special_tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let current = self.current();
        let end = current.ext.base_end();
        let base: Vec<(String, u32)> = (current.ext.special.iter())
            .filter(|(_, i)| u64::from(*i) < end)
            .cloned()
            .collect();
        base.into_py_dict(py)
    }

    /// The base's `.tiktoken` text.
    fn base_ranks(&self) -> String {
        crate::ranks::dumps(self.current().ext.base.iter().map(|(i, t)| (*i, t.as_slice())))
    }

    #[getter]
    fn training_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.stats.clone().into_py_dict(py)
    }

    fn encode_ordinary<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let current = self.current();
        let ids = py.detach(|| guard(|| current.encode_ordinary(text)))?;
        id_list(py, &ids)
    }

    fn encode<'py>(&self, py: Python<'py>, text: &str, allowed: Vec<String>) -> PyResult<Bound<'py, PyList>> {
        let current = self.current();
        let ids = py.detach(|| guard(|| current.encode(text, &allowed)))?;
        id_list(py, &ids)
    }

    /// Encode many texts in parallel (GIL released); `threads=None` uses all cores.
    #[pyo3(signature = (texts, allowed, threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed: Vec<String>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let pool = pool(threads)?;
        let current = self.current();
        let texts: Vec<&str> = texts.iter().map(|t| &**t).collect();
        let batch = py.detach(|| guard(|| pool.install(|| current.encode_batch(&texts, &allowed))))?;
        let lists = batch
            .iter()
            .map(|ids| id_list(py, ids))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, lists)
    }

    fn encode_to_tokens<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let current = self.current();
        let ids = py.detach(|| guard(|| current.encode_ordinary(text)))?;
        Ok(ids.iter().map(|&i| PyBytes::new(py, current.token(i))).collect())
    }

    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Bound<'py, PyList>) -> PyResult<Bound<'py, PyBytes>> {
        let ids = ids_of(&ids)?;
        let current = self.current();
        let bytes = py.detach(|| guard(|| current.decode_bytes(&ids)))?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn token_bytes<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.current().decode_bytes(&[id])?))
    }

    fn is_superword(&self, id: i64) -> PyResult<bool> {
        let current = self.current();
        current.decode_bytes(&[id])?;
        Ok(current.is_superword(id))
    }

    fn id_of(&self, token: &[u8]) -> Option<u32> {
        self.current().id_of(token)
    }

    /// (id, bytes, is_superword) for every base token and superword, ids ascending.
    fn vocab_items<'py>(&self, py: Python<'py>) -> Vec<(u32, Bound<'py, PyBytes>, bool)> {
        let current = self.current();
        let base = current
            .ext
            .base
            .iter()
            .map(|(i, t)| (*i, PyBytes::new(py, t), false));
        let supers = (current.ext.superwords.iter()).map(|(i, t, _)| (*i, PyBytes::new(py, t), true));
        base.chain(supers).collect()
    }

    /// Add special tokens with the next free ids; safe while other threads encode.
    fn register_special_tokens(&self, py: Python<'_>, tokens: Vec<String>) -> PyResult<()> {
        py.detach(|| guard(|| self.state.update(|t| t.with_special_tokens(tokens.clone()))))
    }

    /// The model file's text.
    fn dumps(&self) -> String {
        extend::dumps(&self.current().ext)
    }

    fn dumps_ngrams(&self) -> Option<String> {
        None
    }

    fn dumps_tiktoken(&self) -> PyResult<String> {
        Err(Error::Value(NO_RANKS.into()).into())
    }

    fn save_tiktoken(&self, path: String) -> PyResult<()> {
        drop(path); // (nothing is written: refused)
        Err(Error::Value(NO_RANKS.into()).into())
    }

    fn __repr__(&self) -> String {
        format!(
            "<superword._core.ExtensionTokenizer: {} ids>",
            self.current().vocab_size()
        )
    }
}

const NO_RANKS: &str = "an extension model has no .tiktoken form: tiktoken cannot apply supermerges \
                        across pretokens (save the model file, or use the base's own files)";
