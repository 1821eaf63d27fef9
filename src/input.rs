//! Reading training documents from files, as `superword/_inputs.py` does (same messages):
//! `.txt` is a document per line (without `\n` or `\r\n`), `.jsonl` a JSON record per line
//! (blank lines skipped), either optionally `.gz`; any other suffix reads as `.txt`.
//!
//! Files are read in blocks of about `batch_bytes` (smaller at first, see
//! [`FIRST_BLOCK_BYTES`]), cut after the last complete line, so the corpus is never in memory
//! as a whole; each block's documents go to a callback.  When stage 1 counts on several
//! threads, the next block is read (decompressed, checked to be UTF-8, its lines found) on a
//! thread of its own meanwhile: on the calling thread that was a serial 0.07-0.28 s per 100 MB
//! of plain text between the parallel batches, and gzip's decompression (about 0.5 s) more.
//! (Finding the lines moved there too; splitting a 32 MB block into lines on the
//! calling thread was 8-10 ms between batches, a tenth of a batch on two threads.)

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

/// The refusal of a path that is not a regular file (`superword/_inputs.py` words it alike).
pub fn not_a_regular_file(path: &str) -> Error {
    Error::Value(format!(
        "{path} is not a regular file (a named pipe, device or socket): a training input must be \
         a file that can be read to its end; give a stream as standard input (-) instead"
    ))
}

fn open(path: &str) -> Result<Box<dyn Read>> {
    // opening a named pipe waits for a writer, possibly forever: look at what the path is first
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(not_a_regular_file(path));
        }
    }
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

/// A JSON value as a JSONL record needs it, read without building it: a string, an object
/// (the text field's value, the last one as Python's `json` keeps it when a key repeats, and
/// the first 8 keys, for errors), or anything else by its Python type name.  The other fields
/// are only checked to be JSON: a number out of a double's range there (`1e400`) is accepted,
/// as Python's `json` accepts it, where building the whole record refused it; and no map of
/// fields is built per record.
enum Json {
    Text(String),
    Object(Option<Box<Json>>, Vec<String>),
    Other(&'static str),
}

impl Json {
    /// Python's name for the value's type.
    fn type_name(&self) -> &'static str {
        match self {
            Json::Text(_) => "str",
            Json::Object(..) => "dict",
            Json::Other(kind) => kind,
        }
    }
}

/// Reads one value as [`Json`]; an object keeps the field `.0` (`None`: nothing, only skipped).
#[derive(Clone, Copy)]
struct JsonVisitor<'f>(Option<&'f str>);

impl<'de> serde::de::DeserializeSeed<'de> for JsonVisitor<'_> {
    type Value = Json;

    fn deserialize<D: serde::de::Deserializer<'de>>(self, d: D) -> std::result::Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for JsonVisitor<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Json, E> {
        Ok(Json::Text(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Json, E> {
        Ok(Json::Text(v))
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Json, E> {
        Ok(Json::Other("bool"))
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Json, E> {
        Ok(Json::Other("int"))
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Json, E> {
        Ok(Json::Other("int"))
    }
    fn visit_i128<E>(self, _: i128) -> std::result::Result<Json, E> {
        Ok(Json::Other("int"))
    }
    fn visit_u128<E>(self, _: u128) -> std::result::Result<Json, E> {
        Ok(Json::Other("int"))
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Json, E> {
        Ok(Json::Other("float"))
    }
    fn visit_unit<E>(self) -> std::result::Result<Json, E> {
        Ok(Json::Other("NoneType"))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Json, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Json::Other("list"))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Json, A::Error> {
        let (mut value, mut keys) = (None, Vec::new());
        let Some(field) = self.0 else {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            return Ok(Json::Object(None, keys));
        };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == field {
                value = Some(Box::new(map.next_value_seed(JsonVisitor(None))?));
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
            if keys.len() < 8 && !keys.iter().any(|k: &String| *k == key) {
                keys.push(key.into_owned());
            }
        }
        Ok(Json::Object(value, keys))
    }
}

/// The text of one JSONL line (`None` for a blank line).
fn jsonl_text(line: &str, path: &str, number: usize, field: &str) -> Result<Option<String>> {
    use serde::de::Deserializer as _;
    if line.chars().all(py_isspace) {
        return Ok(None);
    }
    let mut de = serde_json::Deserializer::from_str(line);
    let record = de
        .deserialize_any(JsonVisitor(Some(field)))
        .and_then(|r| de.end().map(|()| r))
        .map_err(|e| {
            if e.to_string().contains("surrogate") {
                Error::Value(format!(
                    "{path}, line {number}: the record holds a lone surrogate escape (\\ud800-\\udfff); it cannot be encoded as UTF-8"
                ))
            } else {
                Error::Value(format!("{path}, line {number}: not valid JSON ({e})"))
            }
        })?;
    match record {
        Json::Object(Some(value), _) => match *value {
            Json::Text(s) => Ok(Some(s)),
            other => Err(Error::Value(format!(
                "{path}, line {number}: field {} is {}, not a string",
                py_repr(field),
                other.type_name()
            ))),
        },
        Json::Object(None, keys) => {
            let fields: Vec<String> = keys.iter().map(|k| py_repr(k)).collect();
            Err(Error::Value(format!(
                "{path}, line {number}: the record has no {} field (fields: {})",
                py_repr(field),
                fields.join(", ")
            )))
        }
        other => Err(Error::Value(format!(
            "{path}, line {number}: expected a JSON object with a {} field, found {}",
            py_repr(field),
            other.type_name()
        ))),
    }
}

/// A batch of documents: the texts themselves, or the lines of a `.jsonl` file, each a record
/// holding one (or blank).  Records are parsed where the batch is counted, in parallel (see
/// `count::Counter::add_batch`).  (They were parsed on the calling thread
/// between batches, 0.15 s per 100 MB that no other thread could share.)
#[derive(Clone, Copy)]
pub enum Batch<'a> {
    Texts(&'a [&'a str]),
    Records {
        lines: &'a [&'a str],
        /// the field that holds the text
        field: &'a str,
        /// the file, and how many lines came before these, for the errors
        path: &'a str,
        first_line: usize,
    },
}

impl Batch<'_> {
    /// How many lines or texts.
    pub fn len(&self) -> usize {
        match self {
            Batch::Texts(texts) => texts.len(),
            Batch::Records { lines, .. } => lines.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of line or text `i`.
    pub fn bytes_of(&self, i: usize) -> usize {
        match self {
            Batch::Texts(texts) => texts[i].len(),
            Batch::Records { lines, .. } => lines[i].len(),
        }
    }

    /// Call `f` with the document of line or text `i`, if it has one (a blank line has none);
    /// a bad record is an error naming its file and line.  Returns whether it had one.
    #[inline]
    pub fn document(&self, i: usize, f: impl FnOnce(&str) -> Result<()>) -> Result<bool> {
        match self {
            Batch::Texts(texts) => f(texts[i]).map(|()| true),
            Batch::Records {
                lines,
                field,
                path,
                first_line,
            } => match jsonl_text(lines[i], path, first_line + i + 1, field)? {
                Some(text) => f(&text).map(|()| true),
                None => Ok(false),
            },
        }
    }

    /// Every document, in order (parsed on this thread).
    pub fn documents(&self) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(self.len());
        for i in 0..self.len() {
            self.document(i, |d| {
                out.push(d.to_string());
                Ok(())
            })?;
        }
        Ok(out)
    }
}

/// A stream of training documents, handed over a batch at a time (stage 1 counts each batch
/// in parallel).  Files, in-memory lists and (at the seam) Python iterators are sources.
pub trait Documents {
    /// Call `f` with successive batches of documents, until the source is exhausted.
    fn for_each_batch(&mut self, f: &mut dyn FnMut(Batch<'_>) -> Result<()>) -> Result<()>;

    /// May the source read ahead on a thread of its own while `f` works?  Stage 1 allows it
    /// when it counts on more than one thread.  Only files do.
    fn read_ahead(&mut self, _allowed: bool) {}
}

/// The next batch of a stream of documents read one at a time: documents until they make at
/// least [`ITERATOR_BATCH_BYTES`] (empty at the end of the stream).
pub fn take_batch<E>(
    documents: impl Iterator<Item = std::result::Result<String, E>>,
) -> std::result::Result<Vec<String>, E> {
    let (mut batch, mut bytes) = (Vec::new(), 0);
    for doc in documents {
        let doc = doc?;
        bytes += doc.len();
        batch.push(doc);
        if bytes >= ITERATOR_BATCH_BYTES {
            break;
        }
    }
    Ok(batch)
}

/// Documents handed over by `next` a batch at a time, until it gives an empty batch (the
/// seam reads a Python iterator so, with [`take_batch`]).
pub struct Batches<F>(pub F);

impl<F: FnMut() -> Result<Vec<String>>> Documents for Batches<F> {
    fn for_each_batch(&mut self, f: &mut dyn FnMut(Batch<'_>) -> Result<()>) -> Result<()> {
        loop {
            let batch = (self.0)()?;
            if batch.is_empty() {
                return Ok(());
            }
            f(Batch::Texts(
                &batch.iter().map(String::as_str).collect::<Vec<_>>(),
            ))?;
        }
    }
}

/// Documents in memory, in one batch.
impl Documents for [String] {
    fn for_each_batch(&mut self, f: &mut dyn FnMut(Batch<'_>) -> Result<()>) -> Result<()> {
        let docs: Vec<&str> = self.iter().map(String::as_str).collect();
        f(Batch::Texts(&docs))
    }
}

/// Files read in blocks of about `BLOCK_BYTES` (see [`for_each_batch`]).
pub struct Files {
    pub paths: Vec<String>,
    /// the JSON field holding the text, for `.jsonl` files
    pub text_field: String,
    /// when raised, reading stops with [`Error::Interrupted`] before the next read (Ctrl-C)
    pub stop: Option<Arc<AtomicBool>>,
    /// read (and decompress, and check) the next block on a thread of its own while the
    /// current one is counted (see [`Documents::read_ahead`])
    pub read_ahead: bool,
}

/// The byte order mark some editors put at the start of a UTF-8 file: not text.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The size of the blocks in which files are read.  (32 MB before.  Two
/// blocks are in memory while the next is read, and a block's buffer is fresh pages the first
/// time: with 8 MB a BPE training of 100 MB of Gutenberg on two threads peaked at 167 MB
/// instead of 215, and its counting took 0.263 s instead of 0.353 (medians of nine
/// interleaved runs; the kernel's zeroing of the buffers' pages had been 0.1 s of CPU time).
/// With pieces taken as they come (`count.rs`), smaller batches cost no balance.)
pub const BLOCK_BYTES: usize = 8 << 20;

/// The size of the batches of documents taken from a Python iterator (each batch is read
/// holding the GIL, then counted without it).
pub const ITERATOR_BATCH_BYTES: usize = 8 << 20;

impl Documents for Files {
    fn for_each_batch(&mut self, f: &mut dyn FnMut(Batch<'_>) -> Result<()>) -> Result<()> {
        let stop = self.stop.as_deref();
        let (paths, field) = (&self.paths, &self.text_field);
        if self.read_ahead {
            for_each_batch_ahead(paths, field, BLOCK_BYTES, stop, f)
        } else {
            for_each_batch(paths, field, BLOCK_BYTES, stop, f)
        }
    }

    fn read_ahead(&mut self, allowed: bool) {
        self.read_ahead = allowed;
    }
}

/// Complete lines of one file, checked to be UTF-8.
struct Block {
    /// index into the paths
    file: usize,
    text: String,
    /// where each `\n` of `text` is (found by the reader: see [`hand_over`])
    newlines: Vec<usize>,
    /// lines of the file before this block
    first_line: usize,
}

/// The first block of a stream is read at most this big, each next one twice as big as the
/// one before, up to the block size asked for: the workers wait for the first block only.
/// (A first block of 32 MB kept both threads of a BPE training of 100 MB
/// idle for its first 0.03 s, a tenth of its counting.)
const FIRST_BLOCK_BYTES: usize = 1 << 20;

/// Read `paths` in blocks of about `batch_bytes` cut after the last complete line (the whole
/// rest at the end of a file), check them and give them to `send` in order.  `spare` gives
/// an empty buffer to fill.  A UTF-8 byte order mark at the start of a file is skipped
/// (editors on Windows write one).  `stop` is checked before every read of at most 16 MB, so
/// that a very long line (read until its end) can be interrupted.
fn read_blocks(
    paths: &[String],
    batch_bytes: usize,
    stop: Option<&AtomicBool>,
    spare: &mut dyn FnMut() -> Vec<u8>,
    send: &mut dyn FnMut(Block) -> Result<()>,
) -> Result<()> {
    // the size of the next block (see `FIRST_BLOCK_BYTES`)
    let mut size = batch_bytes.min(FIRST_BLOCK_BYTES);
    for (file, path) in paths.iter().enumerate() {
        let gz = path.to_lowercase().ends_with(".gz");
        let read_error = |e: std::io::Error| match e.kind() {
            ErrorKind::InvalidInput | ErrorKind::InvalidData | ErrorKind::UnexpectedEof if gz => {
                Error::Value(format!("{path}: corrupt or truncated gzip data ({e})"))
            }
            _ => Error::Io(format!("{path}: cannot be read ({e})")),
        };
        let mut reader = open(path)?;
        let mut buf = spare();
        let mut first_line = 0usize;
        let mut eof = false;
        let mut want = size; // grows while one line is longer than a block
        let mut at_start = true;
        let mut tail = Vec::new();
        while !eof {
            while buf.len() < want {
                if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    return Err(Error::Interrupted);
                }
                // (read into the buffer's spare room, not zeroed first: zeroing a 16 MB piece
                // for a small file was most of its reading, 1 ms for taylorswift.txt)
                let piece = (want - buf.len()).clamp(1 << 20, 1 << 24);
                let n = (&mut reader)
                    .take(piece as u64)
                    .read_to_end(&mut buf)
                    .map_err(read_error)?;
                if n < piece {
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
            // the incomplete last line starts the next buffer
            tail.clear();
            tail.extend_from_slice(&buf[end..]);
            buf.truncate(end);
            let text = String::from_utf8(buf).map_err(|e| {
                let (block, at) = (e.as_bytes(), e.utf8_error().valid_up_to());
                let line_start = memchr::memrchr(b'\n', &block[..at]).map_or(0, |i| i + 1);
                let number = first_line + memchr::memchr_iter(b'\n', &block[..at]).count() + 1;
                Error::Value(format!(
                    "{path}, line {number}: invalid UTF-8 (byte 0x{:02x} at byte offset {} of the line)",
                    block[at],
                    at - line_start
                ))
            })?;
            let newlines: Vec<usize> = memchr::memchr_iter(b'\n', text.as_bytes()).collect();
            let lines = newlines.len();
            send(Block {
                file,
                text,
                newlines,
                first_line,
            })?;
            first_line += lines;
            buf = spare();
            buf.extend_from_slice(&tail);
            size = (size * 2).min(batch_bytes);
            want = size;
        }
    }
    Ok(())
}

/// Give the documents of one block to `f`: its lines (without `\n` or `\r\n`), or for a
/// `.jsonl` file its lines as records whose `text_field` is the document (parsed by `f`, see
/// [`Batch`]).
fn hand_over(
    block: &Block,
    path: &str,
    text_field: &str,
    f: &mut dyn FnMut(Batch<'_>) -> Result<()>,
) -> Result<()> {
    let is_jsonl = {
        let lower = path.to_lowercase();
        lower.strip_suffix(".gz").unwrap_or(&lower).ends_with(".jsonl")
    };
    let text = block.text.as_str();
    let mut lines: Vec<&str> = Vec::with_capacity(block.newlines.len() + 1);
    let mut start = 0;
    for &end in &block.newlines {
        // "\r\n" ends a line too
        let line = &text[start..end];
        lines.push(line.strip_suffix('\r').unwrap_or(line));
        start = end + 1;
    }
    if start < text.len() {
        // a last line without its newline (a lone "\r" at the very end of a file stays)
        lines.push(&text[start..]);
    }
    if is_jsonl {
        f(Batch::Records {
            lines: &lines,
            field: text_field,
            path,
            first_line: block.first_line,
        })
    } else {
        f(Batch::Texts(&lines))
    }
}

/// A block buffer: `given` (one a consumer gave back) emptied, or a new one with room for a
/// block of about `batch_bytes` and the rest of its last line (64 KB more).
fn emptied(given: Option<Vec<u8>>, batch_bytes: usize) -> Vec<u8> {
    let mut b = given.unwrap_or_else(|| Vec::with_capacity(batch_bytes + (1 << 16)));
    b.clear();
    b
}

/// Call `f` with the documents of `paths`, a block of about `batch_bytes` at a time (see
/// [`read_blocks`]), reading on the calling thread.
pub fn for_each_batch(
    paths: &[String],
    text_field: &str,
    batch_bytes: usize,
    stop: Option<&AtomicBool>,
    f: &mut dyn FnMut(Batch<'_>) -> Result<()>,
) -> Result<()> {
    // (one buffer, given back by `send` and taken again by `spare`)
    let returned: std::cell::Cell<Option<Vec<u8>>> = std::cell::Cell::new(None);
    let mut spare = || emptied(returned.take(), batch_bytes);
    let mut send = |block: Block| {
        hand_over(&block, &paths[block.file], text_field, f)?;
        returned.set(Some(block.text.into_bytes()));
        Ok(())
    };
    read_blocks(paths, batch_bytes, stop, &mut spare, &mut send)
}

/// As [`for_each_batch`], but the blocks are read, decompressed and checked on a thread of
/// their own while `f` works on the one before, so that only the first block's reading
/// is not overlapped.  Two blocks are in memory at a time instead of one.
pub fn for_each_batch_ahead(
    paths: &[String],
    text_field: &str,
    batch_bytes: usize,
    stop: Option<&AtomicBool>,
    f: &mut dyn FnMut(Batch<'_>) -> Result<()>,
) -> Result<()> {
    std::thread::scope(|scope| {
        // a rendezvous channel: the reader fills one block ahead, then waits
        let (blocks, received) = std::sync::mpsc::sync_channel::<Result<Block>>(0);
        let (give_back, given_back) = std::sync::mpsc::channel::<Vec<u8>>();
        let reader = std::thread::Builder::new()
            .name("superword-read".into())
            .spawn_scoped(scope, move || {
                let mut spare = || emptied(given_back.try_recv().ok(), batch_bytes);
                // (a failed send means the consumer stopped: its error is the one returned)
                let mut send = |b: Block| blocks.send(Ok(b)).map_err(|_| Error::Interrupted);
                if let Err(e) = read_blocks(paths, batch_bytes, stop, &mut spare, &mut send) {
                    let _ = blocks.send(Err(e));
                }
            })
            .map_err(|e| Error::Runtime(format!("cannot start the thread that reads the files: {e}")))?;
        let mut out = Ok(());
        for block in received.iter() {
            let done = block.and_then(|b| {
                hand_over(&b, &paths[b.file], text_field, f)?;
                let _ = give_back.send(b.text.into_bytes());
                Ok(())
            });
            if let Err(e) = done {
                out = Err(e);
                break;
            }
        }
        drop(received); // a reader still going stops at its next block
        if reader.join().is_err() {
            return Err(Error::internal("the thread that reads the files failed"));
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Reader = fn(
        &[String],
        &str,
        usize,
        Option<&AtomicBool>,
        &mut dyn FnMut(Batch<'_>) -> Result<()>,
    ) -> Result<()>;

    /// Every batch `read` hands over, or its error.
    fn batches(
        read: Reader,
        paths: &[String],
        batch_bytes: usize,
    ) -> std::result::Result<Vec<Vec<String>>, String> {
        let mut out = Vec::new();
        read(paths, "text", batch_bytes, None, &mut |batch| {
            out.push(batch.documents()?);
            Ok(())
        })
        .map_err(|e| format!("{e:?}"))?;
        Ok(out)
    }

    #[test]
    fn reading_ahead_gives_the_same_batches_and_errors() {
        let dir = std::env::temp_dir().join(format!("superword-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            path.to_str().unwrap().to_string()
        };
        // (reads take at least 1 MB, so blocks are 1 MB or more)
        let mut text = String::from("\u{feff}");
        for i in 0..60_000 {
            text.push_str(&format!("line {i} {}\r\n", "x".repeat(i % 37)));
        }
        text.push_str(&"long ".repeat(500_000)); // longer than a block, no newline at the end
        let plain = write("a.txt", text.as_bytes());
        let records: String = (0..100_000)
            .map(|i| format!("{{\"text\": \"doc {i}\"}}\n\n"))
            .collect();
        let jsonl = write("b.jsonl", records.as_bytes());
        let mut bad_json = records.clone();
        let at = bad_json.len() - 40;
        let at = at - bad_json[..at].bytes().rev().position(|b| b == b'\n').unwrap();
        bad_json.insert_str(at, "{oops\n");
        let json_line = bad_json[..at].matches('\n').count() + 1;
        let bad_json = write("c.jsonl", bad_json.as_bytes());
        let mut bad_utf8 = text.clone().into_bytes();
        bad_utf8[1_500_000] = 0xff;
        let utf8_line = text[..1_500_000].matches('\n').count() + 1;
        let bad_utf8 = write("d.txt", &bad_utf8);
        let cases: Vec<Vec<String>> = vec![
            vec![plain.clone()],
            vec![plain.clone(), jsonl.clone(), plain.clone()],
            vec![jsonl.clone(), bad_json],
            vec![plain.clone(), bad_utf8],
            vec![plain, dir.join("missing.txt").to_str().unwrap().to_string()],
        ];
        for paths in &cases {
            for batch_bytes in [64, 1 << 20, 1 << 22] {
                let here = batches(for_each_batch, paths, batch_bytes);
                let ahead = batches(for_each_batch_ahead, paths, batch_bytes);
                assert_eq!(here, ahead, "{paths:?}, blocks of {batch_bytes}");
                if batch_bytes == 64 && paths.len() == 1 {
                    assert!(here.as_ref().unwrap().len() >= 3, "several blocks");
                }
            }
        }
        // the documents are the file's lines, without the byte order mark or "\r\n"; the first
        // block is at most `FIRST_BLOCK_BYTES` (plus what one read takes), the next ones grow
        let blocks: Vec<Vec<String>> = batches(for_each_batch_ahead, &cases[0], 1 << 22).unwrap();
        let sizes: Vec<usize> = blocks
            .iter()
            .map(|b| b.iter().map(|l| l.len() + 2).sum())
            .collect();
        let expected: Vec<&str> = text['\u{feff}'.len_utf8()..]
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        assert_eq!(blocks.concat(), expected);
        assert!(sizes.len() >= 3 && sizes[0] <= 2 * FIRST_BLOCK_BYTES, "{sizes:?}");
        let errors: Vec<String> = cases[2..]
            .iter()
            .map(|p| batches(for_each_batch_ahead, p, 64).unwrap_err())
            .collect();
        let json_error = format!("c.jsonl, line {json_line}: not valid JSON");
        assert!(errors[0].contains(&json_error), "{}", errors[0]);
        let utf8_error = format!("d.txt, line {utf8_line}: invalid UTF-8 (byte 0xff");
        assert!(errors[1].contains(&utf8_error), "{}", errors[1]);
        assert!(errors[2].contains("missing.txt"), "{}", errors[2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_refused_without_waiting_for_a_writer() {
        let dir = std::env::temp_dir().join(format!("superword-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pipe.txt");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.map(|s| s.success()).unwrap_or(false) {
            return; // no mkfifo on this system: nothing to check
        }
        let path = fifo.to_str().unwrap().to_string();
        let err = match open(&path) {
            Err(e) => e,
            Ok(_) => panic!("a named pipe was opened"),
        };
        assert!(matches!(err, Error::Value(_)));
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(err.to_string().contains(&path), "{err}");
        let dir_err = match open(dir.to_str().unwrap()) {
            Err(e) => e,
            Ok(_) => panic!("a folder was opened"),
        };
        assert!(dir_err.to_string().contains("not a regular file"), "{dir_err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failing_consumer_stops_the_reader() {
        let dir = std::env::temp_dir().join(format!("superword-input-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.txt");
        std::fs::write(&path, "one line\n".repeat(600_000)).unwrap();
        let paths = vec![path.to_str().unwrap().to_string()];
        let mut seen = 0;
        let out = for_each_batch_ahead(&paths, "text", 100, None, &mut |_| {
            seen += 1;
            match seen {
                3 => Err(Error::Value("enough".into())),
                _ => Ok(()),
            }
        });
        assert!(matches!(out, Err(Error::Value(m)) if m == "enough"));
        assert_eq!(seen, 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
