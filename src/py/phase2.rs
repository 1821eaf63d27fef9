//! The seam for phase 2 in parts (`superword._ray`'s partitioned phase 2): the split of the
//! corpus' segment table, a part held by a process of its own, and the driver that chooses
//! each merge.  See `crate::train::candidates::two_pass::parts`.
//!
//! What goes between them is bytes, little-endian: a pair count is 16 bytes (left and right
//! token as `u32`, the count as `u64`), a pair-count change 16 (the change as `i64`), a token
//! count 8 (by training id).

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::candidates::PyPhaseOne;
use super::guard;
use super::tokenizer::PyTokenizer;
use crate::control::Silent;
use crate::error::Error;
use crate::tokenizer::Tokenizer;
use crate::tokens::{Pair, TokenId};
use crate::train::candidates::two_pass::{read_part, split_segments as split, PartsPlan, PartsRun, Source};
use crate::train::merging::partitioned::SegmentShard;

fn bad(what: &str) -> PyErr {
    Error::Value(what.to_string()).into()
}

fn records<'a>(data: &'a [u8], size: usize, what: &str) -> PyResult<std::slice::ChunksExact<'a, u8>> {
    if data.len() % size != 0 {
        return Err(bad(&format!(
            "{what}: {} bytes, not a multiple of {size}",
            data.len()
        )));
    }
    Ok(data.chunks_exact(size))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("four bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

fn source_to_bytes(s: &Source) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + 4 * s.order.len());
    for v in [s.fingerprint, s.n_tokens, s.documents, s.pretokens, s.threshold] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for &t in &s.order {
        out.extend_from_slice(&t.to_le_bytes());
    }
    out
}

fn source_from_bytes(data: &[u8]) -> PyResult<Source> {
    if data.len() < 40 || (data.len() - 40) % 4 != 0 {
        return Err(bad("not the source of a phase 1 (Phase2Driver.source)"));
    }
    let v = |i: usize| u64_at(data, 8 * i);
    Ok(Source {
        fingerprint: v(0),
        n_tokens: v(1),
        documents: v(2),
        pretokens: v(3),
        threshold: v(4),
        order: data[40..].chunks_exact(4).map(|c| u32_at(c, 0)).collect(),
    })
}

/// Split the corpus' segment table (`data`, errors name `name`) into `parts` parts for the
/// phase 1 whose [`PyPhase2Driver::source`] is `source`.
#[pyfunction]
pub(crate) fn split_segments(
    py: Python<'_>,
    data: Vec<u8>,
    name: String,
    source: Vec<u8>,
    parts: usize,
) -> PyResult<Vec<Py<PyBytes>>> {
    let source = source_from_bytes(&source)?;
    let out = py.detach(|| guard(|| split(&data, &name, &source, parts)))?;
    Ok(out.iter().map(|b| PyBytes::new(py, b).unbind()).collect())
}

/// Some of the corpus' segments, with the positions of their pairs (a part of phase 2).
#[pyclass(name = "Phase2Part", module = "superword._core", frozen)]
pub struct PyPhase2Part {
    state: Mutex<(SegmentShard, Vec<(TokenId, u64)>)>,
}

impl PyPhase2Part {
    fn with<T>(&self, f: impl FnOnce(&mut (SegmentShard, Vec<(TokenId, u64)>)) -> T) -> PyResult<T> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| Error::Runtime("a phase-2 part whose merge failed".into()))?;
        Ok(f(&mut state))
    }
}

#[pymethods]
impl PyPhase2Part {
    /// A part's bytes, from [`split_segments`] (errors name `name`).
    #[new]
    fn new(py: Python<'_>, data: Vec<u8>, name: String) -> PyResult<PyPhase2Part> {
        let state = py.detach(|| guard(|| read_part(&data, &name)))?;
        Ok(PyPhase2Part {
            state: Mutex::new(state),
        })
    }

    #[getter]
    fn num_segments(&self) -> PyResult<usize> {
        self.with(|(s, _)| s.len())
    }

    /// Distinct pairs of the part's segments now.
    #[getter]
    fn distinct_pairs(&self) -> PyResult<usize> {
        self.with(|(s, _)| s.distinct_pairs())
    }

    /// The part's count of each pair, sorted by pair.
    fn pair_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let counts = self.with(|(s, _)| s.pair_counts())?;
        let mut out = Vec::with_capacity(16 * counts.len());
        for ((l, r), c) in counts {
            out.extend_from_slice(&l.to_le_bytes());
            out.extend_from_slice(&r.to_le_bytes());
            out.extend_from_slice(&c.to_le_bytes());
        }
        Ok(PyBytes::new(py, &out))
    }

    /// Apply the merge of (`left`, `right`) into `merged`: whether a whole segment became one
    /// token, and the changes of the part's pair counts.
    fn merge<'py>(
        &self,
        py: Python<'py>,
        left: TokenId,
        right: TokenId,
        merged: TokenId,
    ) -> PyResult<(bool, Bound<'py, PyBytes>)> {
        let (flag, delta) = self.with(|(s, _)| s.merge((left, right), merged))?;
        let mut out = Vec::with_capacity(16 * delta.len());
        for ((l, r), d) in delta {
            out.extend_from_slice(&l.to_le_bytes());
            out.extend_from_slice(&r.to_le_bytes());
            out.extend_from_slice(&d.to_le_bytes());
        }
        Ok((flag, PyBytes::new(py, &out)))
    }

    /// How often each token occurs in the part's segments (and alone, for the tokens alone the
    /// part carries), by training id.
    fn token_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let counts = self.with(|(s, alone)| {
            let mut counts = Vec::new();
            s.add_token_counts(&mut counts);
            for &(t, c) in alone.iter() {
                if counts.len() <= t as usize {
                    counts.resize(t as usize + 1, 0);
                }
                counts[t as usize] += c;
            }
            counts
        })?;
        let out: Vec<u8> = counts.iter().flat_map(|c| c.to_le_bytes()).collect();
        Ok(PyBytes::new(py, &out))
    }
}

enum Driving {
    Plan(PartsPlan),
    Run(PartsRun),
    Done,
}

/// The driver of phase 2 in parts: the word model, the vocabulary and the count of each
/// distinct pair (no segment), from a phase 1 it finishes.
#[pyclass(name = "Phase2Driver", module = "superword._core", frozen)]
pub struct PyPhase2Driver {
    state: Mutex<Driving>,
}

impl PyPhase2Driver {
    fn with<T>(&self, f: impl FnOnce(&mut Driving) -> PyResult<T>) -> PyResult<T> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| Error::Runtime("a phase-2 driver whose step failed".into()))?;
        f(&mut state)
    }

    fn running<T>(&self, f: impl FnOnce(&mut PartsRun) -> PyResult<T>) -> PyResult<T> {
        self.with(|d| match d {
            Driving::Run(run) => f(run),
            _ => Err(bad(
                "this phase-2 driver is not running (start it once, finish it once)",
            )),
        })
    }
}

#[pymethods]
impl PyPhase2Driver {
    /// Take `one` (finished by this) for phase 2 in parts.
    #[new]
    fn new(one: PyRef<'_, PyPhaseOne>) -> PyResult<PyPhase2Driver> {
        let plan = one.take()?.into_parts()?;
        Ok(PyPhase2Driver {
            state: Mutex::new(Driving::Plan(plan)),
        })
    }

    /// What [`split_segments`] needs of the phase 1.
    #[getter]
    fn source<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.with(|d| match d {
            Driving::Plan(plan) => Ok(PyBytes::new(py, &source_to_bytes(plan.source()))),
            _ => Err(bad("the source is read before the driver starts")),
        })
    }

    /// Begin, on each part's [`PyPhase2Part::pair_counts`].
    fn start(&self, py: Python<'_>, parts: Vec<Vec<u8>>) -> PyResult<()> {
        let mut counts: Vec<Vec<(Pair, u64)>> = Vec::with_capacity(parts.len());
        for (k, part) in parts.iter().enumerate() {
            let rows = records(part, 16, &format!("the pair counts of part {k}"))?;
            counts.push(
                rows.map(|b| ((u32_at(b, 0), u32_at(b, 4)), u64_at(b, 8)))
                    .collect(),
            );
        }
        drop(parts);
        self.with(|d| match std::mem::replace(d, Driving::Done) {
            Driving::Plan(plan) => {
                *d = Driving::Run(py.detach(|| guard(|| plan.start(&counts)))?);
                Ok(())
            }
            other => {
                *d = other;
                Err(bad("this phase-2 driver has started already"))
            }
        })
    }

    /// The next supermerge, `(left, right, merged)` for every part to apply, or `None` when
    /// the vocabulary is full.
    fn next(&self, py: Python<'_>) -> PyResult<Option<(TokenId, TokenId, TokenId)>> {
        self.running(|run| {
            let step = py.detach(|| guard(|| run.next(&Silent)))?;
            Ok(step.map(|((l, r), m)| (l, r, m)))
        })
    }

    /// Every part's answer to the supermerge ([`PyPhase2Part::merge`]).
    fn merged(&self, py: Python<'_>, answers: Vec<(bool, Vec<u8>)>) -> PyResult<()> {
        let mut parsed: Vec<(bool, Vec<(Pair, i64)>)> = Vec::with_capacity(answers.len());
        for (k, (flag, delta)) in answers.iter().enumerate() {
            let rows = records(delta, 16, &format!("the pair-count changes of part {k}"))?;
            let rows = rows.map(|b| ((u32_at(b, 0), u32_at(b, 4)), u64_at(b, 8) as i64));
            parsed.push((*flag, rows.collect()));
        }
        self.running(|run| {
            py.detach(|| guard(|| run.merged(parsed.iter().map(|(f, d)| (*f, &d[..])), &Silent)))
        })
    }

    /// Distinct pairs the driver counts now.
    #[getter]
    fn distinct_pairs(&self) -> PyResult<usize> {
        self.running(|run| Ok(run.distinct_pairs()))
    }

    /// The tokenizer, from every part's [`PyPhase2Part::token_counts`].
    fn finish(&self, py: Python<'_>, counts: Vec<Vec<u8>>) -> PyResult<PyTokenizer> {
        let mut parsed: Vec<Vec<u64>> = Vec::with_capacity(counts.len());
        for (k, c) in counts.iter().enumerate() {
            let rows = records(c, 8, &format!("the token counts of part {k}"))?;
            parsed.push(rows.map(|b| u64_at(b, 0)).collect());
        }
        self.with(|d| match std::mem::replace(d, Driving::Done) {
            Driving::Run(run) => {
                let (model, stats) = py.detach(|| guard(|| run.finish(&parsed)))?;
                Ok(PyTokenizer::new(Tokenizer::trained(model), stats))
            }
            other => {
                *d = other;
                Err(bad(
                    "this phase-2 driver is not running (start it once, finish it once)",
                ))
            }
        })
    }
}
