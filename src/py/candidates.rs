//! The seam for training in two passes (`superword._ray`'s two-pass path): phase 1 on counted
//! pretokens, a shard's supermerge candidates, their sums, and phase 2 on the sum.  See
//! `crate::train::candidates::two_pass`.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator};

use super::counts::{config_for, PyCounts};
use super::tokenizer::PyTokenizer;
use super::{files, guard, iterated, watched, watched_on, PyControl};
use crate::count::count_documents;
use crate::error::Error;
use crate::input::Documents;
use crate::threads::pool;
use crate::tokenizer::Tokenizer;
use crate::train::bpe::Picky;
use crate::train::candidates::two_pass::{
    phase_one, phase_two, shard_candidates, word_model_for_shards, CandidateTable, PhaseOne,
};

/// Supermerge candidates added up over some documents, for one word model (immutable).
#[pyclass(name = "Candidates", module = "superword._core", frozen)]
pub struct PyCandidates {
    table: Arc<CandidateTable>,
}

#[pymethods]
impl PyCandidates {
    /// Parse a candidate table's bytes (errors name `name`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8], name: &str) -> PyResult<PyCandidates> {
        let table = py.detach(|| guard(|| CandidateTable::parse(data, name)))?;
        Ok(PyCandidates {
            table: Arc::new(table),
        })
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let table = self.table.clone();
        let data = py.detach(|| guard(|| Ok(table.to_bytes())))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Distinct candidates.
    #[getter]
    fn num_candidates(&self) -> usize {
        self.table.candidates.len()
    }

    /// Tokens the distinct candidates hold.
    #[getter]
    fn num_tokens(&self) -> usize {
        self.table.tokens()
    }

    #[getter]
    fn documents(&self) -> u64 {
        self.table.documents
    }

    #[getter]
    fn pretokens(&self) -> u64 {
        self.table.pretokens
    }

    /// The fingerprint of the word model the candidates were cut with.
    #[getter]
    fn fingerprint(&self) -> u64 {
        self.table.fingerprint
    }
}

/// The sum of candidate tables made with one word model (`names` name them in errors).
#[pyfunction]
pub(crate) fn merge_candidates(
    py: Python<'_>,
    tables: Vec<PyRef<'_, PyCandidates>>,
    names: Vec<String>,
) -> PyResult<PyCandidates> {
    let tables: Vec<Arc<CandidateTable>> = tables.iter().map(|t| t.table.clone()).collect();
    let merged = py.detach(|| {
        guard(|| {
            let refs: Vec<&CandidateTable> = tables.iter().map(|t| &**t).collect();
            CandidateTable::merge(&refs, &names)
        })
    })?;
    Ok(PyCandidates {
        table: Arc::new(merged),
    })
}

/// A shard's candidates: count its letter runs with the word model's pre-tokenization, cut
/// them with the word model, add them up.
fn candidates(
    py: Python<'_>,
    word_model: String,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents> + Send + 'static,
) -> PyResult<PyCandidates> {
    let (encoder, pretokenizer) =
        py.detach(|| guard(|| word_model_for_shards(&word_model, "the word model")))?;
    let pool = pool(threads)?;
    let table = watched(py, progress, move |control| {
        let counts = count_documents(&mut *documents(control), &pretokenizer, true, &pool, &**control)?;
        pool.install(|| shard_candidates(counts, &encoder, &word_model))
    })?;
    Ok(PyCandidates {
        table: Arc::new(table),
    })
}

/// The candidates of files (`.txt`, `.jsonl`, optionally `.gz`) read by the Rust core.
#[pyfunction]
#[pyo3(signature = (paths, text_field, word_model, *, threads, progress))]
pub(crate) fn candidates_files(
    py: Python<'_>,
    paths: Vec<String>,
    text_field: String,
    word_model: String,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyCandidates> {
    candidates(py, word_model, threads, progress, move |control| {
        files(paths, text_field, control)
    })
}

/// The candidates of a Python iterator of `str` documents.
#[pyfunction]
#[pyo3(signature = (documents, word_model, *, threads, progress))]
pub(crate) fn candidates_iter(
    py: Python<'_>,
    documents: Bound<'_, PyAny>,
    word_model: String,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyCandidates> {
    let iter = PyIterator::from_object(&documents)?.unbind();
    candidates(py, word_model, threads, progress, move |control| {
        iterated(iter, control, None)
    })
}

/// Phase 1 done on the driver, waiting for the corpus' candidates (used once).
#[pyclass(name = "PhaseOne", module = "superword._core", frozen)]
pub struct PyPhaseOne {
    state: Mutex<Option<PhaseOne>>,
    text: String,
}

#[pymethods]
impl PyPhaseOne {
    /// The word model's file, for the shards ([`candidates_files`], [`candidates_iter`]).
    #[getter]
    fn word_model(&self) -> String {
        self.text.clone()
    }

    /// Stage 3 and phase 2 on the candidates of the whole corpus (the sum of every shard's,
    /// a candidate table's bytes; errors name `name`): the trained tokenizer.  (Bytes rather
    /// than a `Candidates`: the table parsed here moves into phase 2, where a `Candidates`
    /// would have to be copied, a second table on the driver.)
    #[pyo3(signature = (data, name, *, threads, progress))]
    fn finish(
        &self,
        py: Python<'_>,
        data: Vec<u8>,
        name: String,
        threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<PyTokenizer> {
        let one = self
            .state
            .lock()
            .map_err(|_| Error::Runtime("a phase 1 whose finishing failed".into()))?
            .take()
            .ok_or_else(|| {
                Error::Value("this phase 1 was already finished (finish is called once)".into())
            })?;
        let pool = pool(threads)?;
        let on = pool.clone();
        let (tokenizer, stats) = watched_on(Some(&on), py, progress, move |control| {
            let table = CandidateTable::parse(&data, &name)?;
            drop(data);
            let mut stats = Vec::new();
            let model = pool.install(|| phase_two(one, table, &**control, &mut stats))?;
            Ok((Tokenizer::trained(model), stats))
        })?;
        Ok(PyTokenizer::new(tokenizer, stats))
    }
}

/// Phase 1 of a BoundlessBPE or SuperBPE training on counted pretokens (the counts' runs, if
/// any, are not used), with the counts' pre-tokenization settings.
#[pyfunction]
#[pyo3(signature = (counts, *, vocab_size, algorithm, supermerges, greedy_split, tau, blowup, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn train_phase_one(
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
) -> PyResult<PyPhaseOne> {
    let table = counts.table.clone();
    let config = config_for(
        &table.settings,
        vocab_size,
        algorithm,
        supermerges,
        greedy_split,
        Picky { tau, blowup },
    )?;
    let pool = pool(threads)?;
    let on = pool.clone();
    let one = watched_on(Some(&on), py, progress, move |control| {
        pool.install(|| phase_one(table.to_counts(false), config, &**control))
    })?;
    let text = one.word_model_text().to_string();
    Ok(PyPhaseOne {
        state: Mutex::new(Some(one)),
        text,
    })
}
