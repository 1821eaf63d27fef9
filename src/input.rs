//! Reading training documents from files, as `superword/_inputs.py` does (same messages):
//! `.txt` is a document per line (without `\n` or `\r\n`), `.jsonl` a JSON record per line
//! (blank lines skipped), either optionally `.gz`; any other suffix reads as `.txt`.
//!
//! Files are read in blocks of about `batch_bytes`, cut after the last complete line, so the
//! corpus is never in memory as a whole; each block's documents go to a callback.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Python's `repr` of a simple string (field names in messages).
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isspace` (Rust's `char::is_whitespace` plus the four separators U+1C..U+1F).
fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn python_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "NoneType",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(n) if n.is_f64() => "float",
        serde_json::Value::Number(_) => "int",
        serde_json::Value::String(_) => "str",
        serde_json::Value::Array(_) => "list",
        serde_json::Value::Object(_) => "dict",
    }
}

fn open(path: &str) -> Result<Box<dyn Read>> {
    let file = File::open(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => Error::NotFound(format!("training input vanished while reading: {path}")),
        _ => Error::Io(format!("{path}: cannot be read ({e})")),
    })?;
    Ok(if path.to_lowercase().ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(
            std::io::BufReader::with_capacity(1 << 20, file),
        ))
    } else {
        Box::new(file)
    })
}

/// The text of one JSONL line (`None` for a blank line).
fn jsonl_text(line: &str, path: &str, number: usize, field: &str) -> Result<Option<String>> {
    if line.chars().all(py_isspace) {
        return Ok(None);
    }
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        if e.to_string().contains("surrogate") {
            Error::Value(format!(
                "{path}, line {number}: the record holds a lone surrogate escape (\\ud800-\\udfff); it cannot be encoded as UTF-8"
            ))
        } else {
            Error::Value(format!("{path}, line {number}: not valid JSON ({e})"))
        }
    })?;
    let serde_json::Value::Object(record) = value else {
        return Err(Error::Value(format!(
            "{path}, line {number}: expected a JSON object with a {} field, found {}",
            py_repr(field),
            python_type(&value)
        )));
    };
    match record.get(field) {
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Error::Value(format!(
            "{path}, line {number}: field {} is {}, not a string",
            py_repr(field),
            python_type(other)
        ))),
        None => {
            let fields: Vec<String> = record.keys().take(8).map(|k| py_repr(k)).collect();
            Err(Error::Value(format!(
                "{path}, line {number}: the record has no {} field (fields: {})",
                py_repr(field),
                fields.join(", ")
            )))
        }
    }
}

/// A stream of training documents, handed over a batch at a time (stage 1 counts each batch
/// in parallel).  Files, in-memory lists and (at the seam) Python iterators are sources.
pub trait Documents {
    /// Call `f` with successive batches of documents, until the source is exhausted.
    fn for_each_batch(&mut self, f: &mut dyn FnMut(&[&str]) -> Result<()>) -> Result<()>;
}

/// The next batch of a stream of documents read one at a time: documents until they make at
/// least a quarter of [`BLOCK_BYTES`] (empty at the end of the stream).
pub fn take_batch<E>(
    documents: impl Iterator<Item = std::result::Result<String, E>>,
) -> std::result::Result<Vec<String>, E> {
    let (mut batch, mut bytes) = (Vec::new(), 0);
    for doc in documents {
        let doc = doc?;
        bytes += doc.len();
        batch.push(doc);
        if bytes >= BLOCK_BYTES / 4 {
            break;
        }
    }
    Ok(batch)
}

/// Documents handed over by `next` a batch at a time, until it gives an empty batch (the
/// seam reads a Python iterator so, with [`take_batch`]).
pub struct Batches<F>(pub F);

impl<F: FnMut() -> Result<Vec<String>>> Documents for Batches<F> {
    fn for_each_batch(&mut self, f: &mut dyn FnMut(&[&str]) -> Result<()>) -> Result<()> {
        loop {
            let batch = (self.0)()?;
            if batch.is_empty() {
                return Ok(());
            }
            f(&batch.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
    }
}

/// Documents in memory, in one batch.
impl Documents for [String] {
    fn for_each_batch(&mut self, f: &mut dyn FnMut(&[&str]) -> Result<()>) -> Result<()> {
        let docs: Vec<&str> = self.iter().map(String::as_str).collect();
        f(&docs)
    }
}

/// Files read in blocks of about `BLOCK_BYTES` (see [`for_each_batch`]).
pub struct Files {
    pub paths: Vec<String>,
    /// the JSON field holding the text, for `.jsonl` files
    pub text_field: String,
    /// when raised, reading stops with [`Error::Interrupted`] before the next read (Ctrl-C)
    pub stop: Option<Arc<AtomicBool>>,
}

/// The byte order mark some editors put at the start of a UTF-8 file: not text.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The size of the blocks in which files are read.
pub const BLOCK_BYTES: usize = 32 << 20;

impl Documents for Files {
    fn for_each_batch(&mut self, f: &mut dyn FnMut(&[&str]) -> Result<()>) -> Result<()> {
        let stop = self.stop.as_deref();
        for_each_batch(&self.paths, &self.text_field, BLOCK_BYTES, stop, f)
    }
}

/// Call `f` with the documents of `paths`, a block at a time.  A UTF-8 byte order mark at the
/// start of a file is skipped (editors on Windows write one).  `stop` is checked before every
/// read of at most 16 MB, so that a very long line (read until its end) can be interrupted.
pub fn for_each_batch(
    paths: &[String],
    text_field: &str,
    batch_bytes: usize,
    stop: Option<&AtomicBool>,
    f: &mut dyn FnMut(&[&str]) -> Result<()>,
) -> Result<()> {
    for path in paths {
        let is_jsonl = {
            let lower = path.to_lowercase();
            lower.strip_suffix(".gz").unwrap_or(&lower).ends_with(".jsonl")
        };
        let mut reader = open(path)?;
        let mut buf: Vec<u8> = Vec::with_capacity(batch_bytes + (1 << 16));
        let mut line_number = 0usize; // lines before `buf`
        let mut eof = false;
        let mut want = batch_bytes; // grows while one line is longer than a block
        let mut at_start = true;
        while !eof {
            // fill the block
            let read_error = |e: std::io::Error| match e.kind() {
                ErrorKind::InvalidInput | ErrorKind::InvalidData | ErrorKind::UnexpectedEof
                    if path.to_lowercase().ends_with(".gz") =>
                {
                    Error::Value(format!("{path}: corrupt or truncated gzip data ({e})"))
                }
                _ => Error::Io(format!("{path}: cannot be read ({e})")),
            };
            while buf.len() < want {
                if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    return Err(Error::Interrupted);
                }
                let start = buf.len();
                buf.resize(start + (want - start).clamp(1 << 20, 1 << 24), 0);
                let n = reader.read(&mut buf[start..]).map_err(read_error)?;
                buf.truncate(start + n);
                if n == 0 {
                    eof = true;
                    break;
                }
            }
            if at_start {
                at_start = false;
                if buf.starts_with(UTF8_BOM) {
                    buf.drain(..UTF8_BOM.len());
                }
            }
            // the complete lines of the block (all of it at the end of the file)
            let end = if eof {
                buf.len()
            } else {
                match memchr::memrchr(b'\n', &buf) {
                    Some(i) => i + 1,
                    None => {
                        want = buf.len() * 2; // one very long line: keep reading
                        continue;
                    }
                }
            };
            let block = &buf[..end];
            let text = std::str::from_utf8(block).map_err(|e| {
                let at = e.valid_up_to();
                let line_start = memchr::memrchr(b'\n', &block[..at]).map_or(0, |i| i + 1);
                let number = line_number + memchr::memchr_iter(b'\n', &block[..at]).count() + 1;
                Error::Value(format!(
                    "{path}, line {number}: invalid UTF-8 (byte 0x{:02x} at byte offset {} of the line)",
                    block[at],
                    at - line_start
                ))
            })?;
            let mut lines: Vec<&str> = text.split('\n').collect();
            let last_is_open = !text.ends_with('\n'); // a last line without its newline
            if !last_is_open || text.is_empty() {
                lines.pop(); // nothing after the last newline
            }
            let terminated = lines.len() - usize::from(last_is_open && !text.is_empty());
            for l in lines[..terminated].iter_mut() {
                // "\r\n" ends a line too; a lone "\r" at the very end of a file stays
                if let Some(stripped) = l.strip_suffix('\r') {
                    *l = stripped;
                }
            }
            if is_jsonl {
                let mut owned = Vec::with_capacity(lines.len());
                for (i, l) in lines.iter().enumerate() {
                    if let Some(t) = jsonl_text(l, path, line_number + i + 1, text_field)? {
                        owned.push(t);
                    }
                }
                let docs: Vec<&str> = owned.iter().map(String::as_str).collect();
                f(&docs)?;
            } else {
                f(&lines)?;
            }
            line_number += lines.len();
            buf.drain(..end);
            want = batch_bytes;
        }
    }
    Ok(())
}
