//! The seam for training in two passes (`superword._ray`'s two-pass path): phase 1 on counted
//! pretokens, a shard's supermerge candidates, their sums, and phase 2 on the sum.  See
//! `crate::train::candidates::two_pass`.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator};

use super::counts::{config_for, PyCounts};
use super::tokenizer::PyTokenizer;
use super::{files, guard, iterated, watched, watched_on, PyControl};
use crate::count::{count_documents, Counts};
use crate::encode::Encoder;
use crate::error::Error;
use crate::input::Documents;
use crate::threads::pool;
use crate::tokenizer::Tokenizer;
use crate::train::bpe::Picky;
use crate::train::candidates::two_pass::{
    phase_one, phase_two, phase_two_segments, shard_candidates, shard_pairs, shard_segments,
    word_model_for_shards, CandidateTable, PairTable, PhaseOne, SegmentTable,
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

/// What a task of pass 2 makes of a shard: count its letter runs with the word model's
/// pre-tokenization, then `make` (the counts, the word model's encoder, its file).
fn of_shard<T: Send + 'static>(
    py: Python<'_>,
    word_model: String,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents> + Send + 'static,
    make: impl FnOnce(Counts, &Encoder, &str) -> Result<T, Error> + Send + 'static,
) -> PyResult<T> {
    let (encoder, pretokenizer) =
        py.detach(|| guard(|| word_model_for_shards(&word_model, "the word model")))?;
    let pool = pool(threads)?;
    watched(py, progress, move |control| {
        let counts = count_documents(&mut *documents(control), &pretokenizer, true, &pool, &**control)?;
        pool.install(|| make(counts, &encoder, &word_model))
    })
}

/// A shard's candidates: its letter runs cut with the word model, added up.
fn candidates(
    py: Python<'_>,
    word_model: String,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents> + Send + 'static,
) -> PyResult<PyCandidates> {
    let table = of_shard(py, word_model, threads, progress, documents, shard_candidates)?;
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

/// Counts of the pairs adjacent in supermerge candidates (one partition of them), or the
/// strong pairs of a corpus (immutable).
#[pyclass(name = "Pairs", module = "superword._core", frozen)]
pub struct PyPairs {
    table: Arc<PairTable>,
}

#[pymethods]
impl PyPairs {
    /// Parse a pair table's bytes (errors name `name`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8], name: &str) -> PyResult<PyPairs> {
        let table = py.detach(|| guard(|| PairTable::parse(data, name)))?;
        Ok(PyPairs {
            table: Arc::new(table),
        })
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let table = self.table.clone();
        let data = py.detach(|| guard(|| Ok(table.to_bytes())))?;
        Ok(PyBytes::new(py, &data))
    }

    /// The pairs counted more than `threshold` times (of a table of all pairs).
    fn kept_above(&self, py: Python<'_>, threshold: u64) -> PyResult<PyPairs> {
        let table = self.table.clone();
        let kept = py.detach(|| guard(|| table.kept_above(threshold)))?;
        Ok(PyPairs {
            table: Arc::new(kept),
        })
    }

    /// Distinct pairs.
    #[getter]
    fn num_pairs(&self) -> usize {
        self.table.pairs.len()
    }

    #[getter]
    fn documents(&self) -> u64 {
        self.table.documents
    }

    /// The threshold the pairs are kept above (`None`: all pairs).
    #[getter]
    fn threshold(&self) -> Option<u64> {
        self.table.above
    }
}

/// The sum of pair tables (of all pairs) made with one word model over disjoint documents.
#[pyfunction]
pub(crate) fn merge_pairs(
    py: Python<'_>,
    tables: Vec<PyRef<'_, PyPairs>>,
    names: Vec<String>,
) -> PyResult<PyPairs> {
    let tables: Vec<Arc<PairTable>> = tables.iter().map(|t| t.table.clone()).collect();
    let merged = py.detach(|| {
        guard(|| {
            let refs: Vec<&PairTable> = tables.iter().map(|t| &**t).collect();
            PairTable::merge(&refs, &names)
        })
    })?;
    Ok(PyPairs {
        table: Arc::new(merged),
    })
}

fn pairs(
    py: Python<'_>,
    word_model: String,
    partitions: usize,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents> + Send + 'static,
) -> PyResult<Vec<PyPairs>> {
    let tables = of_shard(
        py,
        word_model,
        threads,
        progress,
        documents,
        move |counts, encoder, text| shard_pairs(counts, encoder, text, partitions),
    )?;
    Ok(tables
        .into_iter()
        .map(|t| PyPairs { table: Arc::new(t) })
        .collect())
}

/// The pairs of the candidates of files read by the Rust core, in `partitions` tables by hash.
#[pyfunction]
#[pyo3(signature = (paths, text_field, word_model, partitions, *, threads, progress))]
pub(crate) fn pairs_files(
    py: Python<'_>,
    paths: Vec<String>,
    text_field: String,
    word_model: String,
    partitions: usize,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<PyPairs>> {
    pairs(py, word_model, partitions, threads, progress, move |control| {
        files(paths, text_field, control)
    })
}

/// The pairs of the candidates of a Python iterator of `str` documents.
#[pyfunction]
#[pyo3(signature = (documents, word_model, partitions, *, threads, progress))]
pub(crate) fn pairs_iter(
    py: Python<'_>,
    documents: Bound<'_, PyAny>,
    word_model: String,
    partitions: usize,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<PyPairs>> {
    let iter = PyIterator::from_object(&documents)?.unbind();
    pairs(py, word_model, partitions, threads, progress, move |control| {
        iterated(iter, control, None)
    })
}

/// Segments of supermerge candidates added up over some documents, for one word model and one
/// set of strong pairs (immutable).
#[pyclass(name = "Segments", module = "superword._core", frozen)]
pub struct PySegments {
    table: Arc<SegmentTable>,
}

#[pymethods]
impl PySegments {
    /// Parse a segment table's bytes (errors name `name`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8], name: &str) -> PyResult<PySegments> {
        let table = py.detach(|| guard(|| SegmentTable::parse(data, name)))?;
        Ok(PySegments {
            table: Arc::new(table),
        })
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let table = self.table.clone();
        let data = py.detach(|| guard(|| Ok(table.to_bytes())))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Distinct segments (of two or more tokens).
    #[getter]
    fn num_segments(&self) -> usize {
        self.table.segments.len()
    }

    /// Tokens the distinct segments hold.
    #[getter]
    fn num_tokens(&self) -> usize {
        self.table.tokens()
    }

    #[getter]
    fn documents(&self) -> u64 {
        self.table.documents
    }
}

/// The sum of segment tables made with one word model and one set of strong pairs.
#[pyfunction]
pub(crate) fn merge_segments(
    py: Python<'_>,
    tables: Vec<PyRef<'_, PySegments>>,
    names: Vec<String>,
) -> PyResult<PySegments> {
    let tables: Vec<Arc<SegmentTable>> = tables.iter().map(|t| t.table.clone()).collect();
    let merged = py.detach(|| {
        guard(|| {
            let refs: Vec<&SegmentTable> = tables.iter().map(|t| &**t).collect();
            SegmentTable::merge(&refs, &names)
        })
    })?;
    Ok(PySegments {
        table: Arc::new(merged),
    })
}

/// [`merge_segments`] on tables' bytes, into bytes (what a merge task does: it never holds
/// the parsed tables).
#[pyfunction]
pub(crate) fn merge_segment_bytes(
    py: Python<'_>,
    tables: Vec<Vec<u8>>,
    names: Vec<String>,
) -> PyResult<Py<PyBytes>> {
    let merged = py.detach(|| {
        guard(|| {
            let refs: Vec<&[u8]> = tables.iter().map(|t| &t[..]).collect();
            SegmentTable::merge_bytes(&refs, &names)
        })
    })?;
    Ok(PyBytes::new(py, &merged).unbind())
}

fn segments(
    py: Python<'_>,
    word_model: String,
    strong: &PyPairs,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    documents: impl FnOnce(&Arc<PyControl>) -> Box<dyn Documents> + Send + 'static,
) -> PyResult<PySegments> {
    let strong = strong.table.clone();
    let table = of_shard(
        py,
        word_model,
        threads,
        progress,
        documents,
        move |counts, encoder, text| shard_segments(counts, encoder, text, &strong),
    )?;
    Ok(PySegments {
        table: Arc::new(table),
    })
}

/// The segments of the candidates of files read by the Rust core, cut where no pair of
/// `strong` stands.
#[pyfunction]
#[pyo3(signature = (paths, text_field, word_model, strong, *, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn segments_files(
    py: Python<'_>,
    paths: Vec<String>,
    text_field: String,
    word_model: String,
    strong: PyRef<'_, PyPairs>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PySegments> {
    segments(py, word_model, &strong, threads, progress, move |control| {
        files(paths, text_field, control)
    })
}

/// The segments of the candidates of a Python iterator of `str` documents.
#[pyfunction]
#[pyo3(signature = (documents, word_model, strong, *, threads, progress))]
pub(crate) fn segments_iter(
    py: Python<'_>,
    documents: Bound<'_, PyAny>,
    word_model: String,
    strong: PyRef<'_, PyPairs>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<PySegments> {
    let iter = PyIterator::from_object(&documents)?.unbind();
    segments(py, word_model, &strong, threads, progress, move |control| {
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

    /// The word model's smallest merge count, at and below which a pair of candidates never
    /// wins (`None`: no merges).
    #[getter]
    fn threshold(&self) -> PyResult<Option<u64>> {
        self.with(|one| one.threshold())
    }

    /// Whether pass 2 can cut the candidates into segments in its tasks (BoundlessBPE without
    /// the greedy split); otherwise it returns the uncut candidates.
    #[getter]
    fn cuts_in_tasks(&self) -> PyResult<bool> {
        self.with(|one| one.cuts_in_tasks())
    }

    /// The strong pairs of the corpus: the union of its partitions' pairs (each summed over
    /// every shard and kept above [`Self::threshold`]), checked against this phase 1.
    fn strong_pairs(
        &self,
        py: Python<'_>,
        tables: Vec<PyRef<'_, PyPairs>>,
        names: Vec<String>,
    ) -> PyResult<PyPairs> {
        let tables: Vec<Arc<PairTable>> = tables.iter().map(|t| t.table.clone()).collect();
        let refs: Vec<&PairTable> = tables.iter().map(|t| &**t).collect();
        let strong = self.with(|one| py.detach(|| guard(|| one.strong_pairs(&refs, &names))))??;
        Ok(PyPairs {
            table: Arc::new(strong),
        })
    }

    /// Phase 2 on the segments of the whole corpus (the sum of every shard's, a segment
    /// table's bytes; errors name `name`): the trained tokenizer.
    #[pyo3(signature = (data, name, *, threads, progress))]
    fn finish_segments(
        &self,
        py: Python<'_>,
        data: Vec<u8>,
        name: String,
        threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<PyTokenizer> {
        let one = self.take()?;
        let pool = pool(threads)?;
        let on = pool.clone();
        let (tokenizer, stats) = watched_on(Some(&on), py, progress, move |control| {
            let mut stats = Vec::new();
            let model = pool.install(|| phase_two_segments(one, data, &name, &**control, &mut stats))?;
            Ok((Tokenizer::trained(model), stats))
        })?;
        Ok(PyTokenizer::new(tokenizer, stats))
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
        let one = self.take()?;
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

impl PyPhaseOne {
    /// The phase 1, taken to be finished (once).
    pub(super) fn take(&self) -> PyResult<PhaseOne> {
        Ok(self
            .state
            .lock()
            .map_err(|_| Error::Runtime("a phase 1 whose finishing failed".into()))?
            .take()
            .ok_or_else(|| {
                Error::Value("this phase 1 was already finished (finish is called once)".into())
            })?)
    }

    /// `f` of the phase 1 not yet finished.
    fn with<T>(&self, f: impl FnOnce(&PhaseOne) -> T) -> PyResult<T> {
        let state = self
            .state
            .lock()
            .map_err(|_| Error::Runtime("a phase 1 whose finishing failed".into()))?;
        let one = state
            .as_ref()
            .ok_or_else(|| Error::Value("this phase 1 was already finished".into()))?;
        Ok(f(one))
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
