//! Reading and writing "BoundlessBPE v2" files, byte-identical to `reference/model.py` (and to
//! the paper's writer).  Errors name the file and line with the reference's messages.

use super::bytemap::{parse, render};
use super::{merge_indices, ByteStrings, Deletion, Kind, Merge, Merges, Model, Settings};
use crate::error::{Error, Result};
use crate::tokens::ngram::MAX_NGRAM;
use std::fmt::Write as _;

// ------------------------------------------------------------------------------------------
// writing

/// A string as Python's `json.dumps` writes it (ASCII only: other characters as `\uXXXX`).
pub fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if !(' '..='~').contains(&c) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{:04x}", u);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Python's `repr` writes the common cases ("1.1", "1.0").
fn py_float(x: f64) -> String {
    // Python's repr: the shortest digits that read back to `x` (what `{:e}` gives too), in
    // positional notation for decimal exponents -4 to 15 (with ".0" when whole), otherwise
    // as d.ddde±XX (at least two exponent digits): 1e-05, 1.5e+16.
    let scientific = format!("{x:e}");
    let Some((digits, exponent)) = scientific.split_once('e') else {
        return scientific; // inf and NaN (tau is checked to be finite before it gets here)
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let positional = format!("{x}");
        if positional.contains('.') {
            positional
        } else {
            positional + ".0"
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{digits}e{sign}{:02}", exponent.abs())
    }
}

/// The config JSON object, keys in the order SPEC 8 fixes.  Only the words section records
/// the deletion settings: phase 2 makes no deletions (SPEC 9), so the superwords section
/// says tau 1.1 and no blowup, as the paper's writer does.
fn config(s: &Settings, is_super: bool, superbpe_mode: bool) -> String {
    let mut out = String::new();
    let (tau, blowup) = if is_super {
        (NO_DELETIONS_TAU, false)
    } else {
        (s.tau, s.blowup)
    };
    let _ = write!(
        out,
        "{{\"tau\": {}, \"is_super\": {is_super}, \"superbpe_mode\": {superbpe_mode}, \"blowup\": {blowup}, \"main_regex\": ",
        py_float(tau),
    );
    json_string(&s.main_regex, &mut out);
    out.push_str(", \"script_specific_regex\": ");
    match &s.script_specific_regex {
        Some(r) => json_string(r, &mut out),
        None => out.push_str("null"),
    }
    out.push_str(", \"script_specific_scripts\": ");
    match &s.script_specific_scripts {
        Some(names) => {
            out.push('[');
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                json_string(n, &mut out);
            }
            out.push(']');
        }
        None => out.push_str("null"),
    }
    out.push_str(", \"merge_pattern\": ");
    json_string(&s.merge_pattern, &mut out);
    out.push('}');
    out
}

/// The tau that turns deletions off (a ratio never exceeds 1, SPEC 9).
pub const NO_DELETIONS_TAU: f64 = 1.1;

fn section(
    out: &mut String,
    s: &Settings,
    is_super: bool,
    superbpe_mode: bool,
    merges: &Merges,
    deletions: &[Deletion],
) {
    out.push_str(&config(s, is_super, superbpe_mode));
    let _ = write!(out, "\nmerges\n{}\n", merges.len());
    for (i, m) in merge_indices(merges.len(), deletions)
        .into_iter()
        .zip(merges.iter())
    {
        let _ = writeln!(
            out,
            "{i} {} {} {} {}",
            render(m.left),
            render(m.right),
            m.count,
            m.flag as u8
        );
    }
    let _ = writeln!(out, "deletions\n{}", deletions.len());
    for d in deletions {
        let _ = writeln!(out, "{} {}", d.index, render(&d.token));
    }
}

/// The model file's text.
pub fn dumps(model: &Model) -> String {
    let mut out = String::with_capacity(64 * model.vocab.len() + 4096);
    let _ = write!(
        out,
        "BoundlessBPE v2 {}\nvocabulary\n{}\n",
        model.kind.name(),
        model.vocab.len()
    );
    for (i, ((t, c), s)) in model
        .vocab
        .iter()
        .zip(&model.counts)
        .zip(&model.is_super)
        .enumerate()
    {
        let _ = writeln!(out, "{i} {} {c} {}", render(t), *s as u8);
    }
    let _ = writeln!(out, "special_tokens\n{}", model.special_tokens.len());
    let mut special = model.special_tokens.clone();
    special.sort_by_key(|(_, id)| *id);
    for (text, id) in &special {
        let _ = writeln!(out, "{id} {text}");
    }
    out.push_str("words\n");
    section(
        &mut out,
        &model.settings,
        false,
        false,
        &model.merges,
        &model.deletions,
    );
    if model.kind != Kind::Word {
        out.push_str("superwords\n");
        section(
            &mut out,
            &model.settings,
            true,
            model.kind == Kind::SuperBpe,
            &model.supermerges,
            &[],
        );
    }
    // the greedy split's n-gram table is never part of the file (SPEC 3.1): see dumps_ngrams
    out
}

/// The first line of an n-gram sidecar file (as `reference/model.py`).
pub const NGRAMS_HEADER: &str = "superword ngrams v1";

/// Where the n-gram table of the model file at `model_path` is kept.
pub fn ngrams_path(model_path: &str) -> String {
    format!("{model_path}.ngrams")
}

/// The n-gram sidecar's text: the header, the number of n-grams, one n-gram per line (its
/// pretokens in the printable form, separated by spaces).
pub fn dumps_ngrams(ngrams: &[Vec<Vec<u8>>]) -> String {
    let mut out = format!("{NGRAMS_HEADER}\n{}\n", ngrams.len());
    for g in ngrams {
        let parts: Vec<String> = g.iter().map(|t| render(t)).collect();
        let _ = writeln!(out, "{}", parts.join(" "));
    }
    out
}

/// Parse an n-gram sidecar's text; `name` is used in error messages.
pub fn loads_ngrams(text: &str, name: &str) -> Result<Vec<Vec<Vec<u8>>>> {
    let mut lines = Lines {
        name,
        rest: text,
        number: 0,
    };
    lines.expect(NGRAMS_HEADER)?;
    read_ngram_lines(&mut lines)
}

fn read_ngram_lines(lines: &mut Lines) -> Result<Vec<Vec<Vec<u8>>>> {
    let k = lines.count("n-grams")?;
    let mut table = Vec::with_capacity(lines.room(k, 2));
    for _ in 0..k {
        let line = lines.next("an n-gram")?;
        // the greedy split keeps every prefix of every n-gram (`prefix_set`), memory in the
        // square of its length; training never makes one longer than MAX_NGRAM (SPEC 3.1)
        let n = line.split(' ').count();
        if n > MAX_NGRAM {
            return Err(lines.error(format!(
                "an n-gram of {n} pretokens; n-grams have at most {MAX_NGRAM} (SPEC 3.1)"
            )));
        }
        table.push(
            line.split(' ')
                .map(|t| lines.token(t))
                .collect::<Result<Vec<_>>>()?,
        );
    }
    Ok(table)
}

/// Read the n-gram sidecar of the model file at `model_path`.
pub fn read_ngrams(model_path: &str) -> Result<Vec<Vec<Vec<u8>>>> {
    let name = ngrams_path(model_path);
    // reading a FIFO waits for a writer and a device may never end: only a regular file is
    // read (a missing one is named below)
    if std::fs::metadata(&name).is_ok_and(|m| !m.is_file()) {
        return Err(Error::Value(format!(
            "{name}: not a regular file, so not an n-gram table"
        )));
    }
    let bytes = std::fs::read(&name).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::Value(format!(
                "{name}: no n-gram table next to the model (greedy_split=True needs the sidecar \
                 file '<model>.ngrams' that saving a model trained with greedy_split=True writes)"
            ))
        } else {
            Error::Io(format!("cannot read {name}: {e}"))
        }
    })?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::Value(format!("{name}: not an n-gram table (invalid UTF-8)")))?;
    loads_ngrams(text, &name)
}

/// Write atomically, with the rules of `superword/_files.py`: the text goes to a uniquely named
/// temporary file beside the target (`.NAME.superword-rust-PID-N.tmp`), is flushed to disk and
/// renamed over the target, so a reader or a `kill -9` sees the old file or the new one and two
/// threads saving to one path do not collide.  The target must be a regular file or absent
/// (a folder, FIFO, device or socket is refused); a symbolic link is written through.
pub fn write_atomic(path: &str, text: &str) -> Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SAVES: AtomicU64 = AtomicU64::new(0);
    let mut target = std::path::PathBuf::from(path);
    match std::fs::metadata(&target) {
        Ok(m) if m.is_file() => {
            if std::fs::symlink_metadata(&target).is_ok_and(|l| l.file_type().is_symlink()) {
                target = std::fs::canonicalize(&target)
                    .map_err(|e| Error::Io(format!("cannot write {path}: {e}")))?;
            }
        }
        Ok(m) => {
            let kind = if m.is_dir() {
                "a folder"
            } else {
                "not a regular file"
            };
            return Err(Error::Value(format!(
                "{path} is {kind}; superword only writes regular files (they are replaced atomically)"
            )));
        }
        Err(_) => {}
    }
    let folder = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = folder.join(format!(
        ".{name}.superword-rust-{}-{}.tmp",
        std::process::id(),
        SAVES.fetch_add(1, Ordering::Relaxed)
    ));
    let io = |e: std::io::Error| {
        let _ = std::fs::remove_file(&tmp);
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound(format!("cannot write {path}: {e}"))
        } else {
            Error::Io(format!("cannot write {path}: {e}"))
        }
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, &target).map_err(io)
}

// ------------------------------------------------------------------------------------------
// reading

/// A line or part of one quoted for a message (JSON quoting, at most 60 characters), as
/// the reference's `_show`.
fn show(text: &str) -> String {
    let cut: String = text.chars().take(60).collect();
    serde_json::to_string(&cut).unwrap_or_default()
}

fn is_uint(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

struct Lines<'a> {
    name: &'a str,
    rest: &'a str,
    number: usize,
}

impl<'a> Lines<'a> {
    fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::Value(format!("{}, line {}: {message}", self.name, self.number))
    }

    fn next(&mut self, what: &str) -> Result<&'a str> {
        self.number += 1;
        if self.rest.is_empty() {
            return Err(self.error(format!("file ends early; expected {what}")));
        }
        match self.rest.find('\n') {
            Some(i) => {
                let line = &self.rest[..i];
                self.rest = &self.rest[i + 1..];
                Ok(line)
            }
            None => Err(self.error(format!("file ends in the middle of a line; expected {what}"))),
        }
    }

    fn expect(&mut self, word: &str) -> Result<()> {
        let line = self.next(&show(word))?;
        if line != word {
            return Err(self.error(format!("expected {}, found {}", show(word), show(line))));
        }
        Ok(())
    }

    fn count(&mut self, what: &str) -> Result<usize> {
        let line = self.next(&format!("the number of {what}"))?;
        if !is_uint(line) {
            return Err(self.error(format!("expected the number of {what}, found {}", show(line))));
        }
        line.parse()
            .map_err(|_| self.error(format!("number of {what} too large")))
    }

    /// How many of `n` entries, each at least `min_line` bytes, what is left of the file can
    /// hold: a count read from a file only pre-allocates that much, so a hostile count (a
    /// vocabulary of 10^14) cannot abort the process; its entries then run out and the line
    /// where they do is named, as the reference names it.
    fn room(&self, n: usize, min_line: usize) -> usize {
        n.min(self.rest.len() / min_line)
    }

    fn fields(&mut self, n: usize, what: &str) -> Result<Vec<&'a str>> {
        let line = self.next(what)?;
        let parts: Vec<&str> = line.split(' ').collect();
        if parts.len() != n {
            return Err(self.error(format!(
                "expected {what} ({n} fields separated by spaces), found {}",
                show(line)
            )));
        }
        Ok(parts)
    }

    fn token(&self, text: &str) -> Result<Vec<u8>> {
        let t = parse(text).map_err(|c| {
            self.error(format!(
                "token {} has a character outside the byte map: {}",
                show(text),
                show(&c.to_string())
            ))
        })?;
        if t.is_empty() {
            return Err(self.error("empty token"));
        }
        Ok(t)
    }
}

/// Parse a model file's text; `name` is used in error messages.
pub fn loads(text: &str, name: &str) -> Result<Model> {
    let mut lines = Lines {
        name,
        rest: text,
        number: 0,
    };
    let header = lines.next("the header 'BoundlessBPE v2 <kind>'")?;
    let parts: Vec<&str> = header.split(' ').collect();
    let kind = match parts.as_slice() {
        ["BoundlessBPE", "v2", k] => Kind::from_name(k),
        _ => None,
    }
    .ok_or_else(|| lines.error(format!("not a BoundlessBPE v2 model (header {})", show(header))))?;
    lines.expect("vocabulary")?;
    let n = lines.count("vocabulary entries")?;
    let count_line = lines.number;
    let room = lines.room(n, 8);
    let (mut vocab, mut counts, mut is_super) = (
        ByteStrings::with_capacity(room),
        Vec::with_capacity(room),
        Vec::with_capacity(room),
    );
    let mut seen = std::collections::HashSet::with_capacity(room);
    for i in 0..n {
        let f = lines.fields(4, "'<id> <token> <count> <is_super>'")?;
        if f[0] != i.to_string() || !is_uint(f[2]) || (f[3] != "0" && f[3] != "1") {
            return Err(lines.error(format!(
                "bad vocabulary entry (expected id {i}, a count and 0 or 1)"
            )));
        }
        let raw = lines.token(f[1])?;
        // the map is one to one, so a token's printed form stands for its bytes
        if !seen.insert(f[1]) {
            return Err(lines.error(format!("token {} appears twice in the vocabulary", show(f[1]))));
        }
        vocab.push(&raw);
        counts.push(f[2].parse().map_err(|_| lines.error("count too large"))?);
        is_super.push(f[3] == "1");
    }
    // every byte UTF-8 text can hold is a token (SPEC 2.2): the encoder falls back on them
    if let Some(b) = crate::tokens::byte_token_values().find(|&b| !seen.contains(render(&[b]).as_str())) {
        return Err(Error::Value(format!(
            "{name}, line {count_line}: the vocabulary lacks the byte token {}; every byte UTF-8 \
             text can hold must be a token (SPEC 2.2)",
            show(&render(&[b]))
        )));
    }
    lines.expect("special_tokens")?;
    // The special tokens take the ids after the vocabulary, one each, as registering gives
    // them (the vocabulary size counts them so, and decoding finds them so): with n tokens
    // and k special ones, the ids n..n+k-1 in some order.  A file that gives one a token's
    // id, an id beyond these or an id or a text twice is refused (SPEC 8).
    let k = lines.count("special tokens")?;
    let first = vocab.len() as u64;
    let mut special_tokens = Vec::with_capacity(lines.room(k, 4));
    let mut texts = std::collections::HashSet::with_capacity(lines.room(k, 4));
    let mut ids = std::collections::HashSet::with_capacity(lines.room(k, 4));
    for _ in 0..k {
        let line = lines.next("'<id> <special token>'")?;
        let (id, text) = line.split_once(' ').unwrap_or((line, ""));
        if !is_uint(id) || text.is_empty() {
            return Err(lines.error(format!("bad special token entry {}", show(line))));
        }
        // (more than 20 digits is out of range, leading zeros or not, as in the reference)
        let id = (id.len() <= 20).then(|| id.parse::<u64>().ok()).flatten();
        let id = id.filter(|i| (first..first + k as u64).contains(i));
        let Some(id) = id else {
            return Err(lines.error(special_ids(text, first, k)));
        };
        if !texts.insert(text) {
            return Err(lines.error(format!("special token {} appears twice", show(text))));
        }
        if !ids.insert(id) {
            return Err(lines.error(format!("special token id {id} appears twice")));
        }
        special_tokens.push((text.to_string(), id as u32));
    }
    lines.expect("words")?;
    let (settings, _, _, merges, merge_lines, deletions) = read_section(&mut lines)?;
    let index = crate::tokens::StringIndex::new(&vocab);
    let in_vocab = |t: &[u8]| index.get(&vocab, t).is_some();
    let deleted: std::collections::HashSet<&[u8]> = deletions.iter().map(|d| d.token.as_slice()).collect();
    check_merges(
        name,
        &merges,
        &merge_lines,
        &in_vocab,
        (!deletions.is_empty()).then_some(&deleted),
    )?;
    let mut supermerges = Merges::default();
    if kind != Kind::Word {
        lines.expect("superwords")?;
        let (_, is_sup, superbpe_mode, m, m_lines, super_deletions) = read_section(&mut lines)?;
        if !is_sup || superbpe_mode != (kind == Kind::SuperBpe) {
            return Err(lines.error(format!(
                "superwords config does not match the model kind {}",
                show(kind.name())
            )));
        }
        if !super_deletions.is_empty() {
            return Err(lines.error(
                "the superwords section has deletions; only the word model (phase 1) can delete tokens (SPEC 9)",
            ));
        }
        check_merges(name, &m, &m_lines, &in_vocab, None)?;
        supermerges = m;
    }
    let mut ngrams = None;
    if lines.rest.starts_with("ngrams\n") {
        // written by earlier superword versions after everything the paper's reader reads;
        // kept for an explicit greedy_split=True at inference, never written again
        lines.next("ngrams")?;
        ngrams = Some(read_ngram_lines(&mut lines)?);
    }
    special_tokens.sort_by_key(|(_, id)| *id);
    Ok(Model {
        kind,
        settings,
        vocab,
        counts,
        is_super,
        merges,
        supermerges,
        special_tokens,
        ngrams,
        deletions,
    })
}

/// The error for a special token whose id is not one of those after the vocabulary.
fn special_ids(text: &str, first: u64, k: usize) -> String {
    format!(
        "special token {} has an id outside {first}..{}: a model's {k} special tokens take the ids \
         after its {first} vocabulary tokens",
        show(text),
        first + k as u64 - 1
    )
}

/// A section's config, `is_super`, `superbpe_mode`, merges, the line of each merge, and
/// deletions.
type Section = (Settings, bool, bool, Merges, Vec<usize>, Vec<Deletion>);

/// Refuse merges the encoder could not use, naming the merge's line: each makes a vocabulary
/// token (or, in a section with deletions, `deleted`, a token deleted later), and without
/// deletions its two halves are vocabulary tokens too.
fn check_merges(
    name: &str,
    merges: &Merges,
    at: &[usize],
    in_vocab: &dyn Fn(&[u8]) -> bool,
    deleted: Option<&std::collections::HashSet<&[u8]>>,
) -> Result<()> {
    let mut made = Vec::new();
    for (m, line) in merges.iter().zip(at) {
        made.clear();
        made.extend_from_slice(m.left);
        made.extend_from_slice(m.right);
        let error = |what: String| Error::Value(format!("{name}, line {line}: {what}"));
        match deleted {
            None => {
                for half in [m.left, m.right] {
                    if !in_vocab(half) {
                        return Err(error(format!(
                            "the merge's half {} is not in the vocabulary",
                            show(&render(half))
                        )));
                    }
                }
                if !in_vocab(&made) {
                    return Err(error(format!(
                        "the merge makes {}, which is not in the vocabulary",
                        show(&render(&made))
                    )));
                }
            }
            Some(deleted) => {
                if !in_vocab(&made) && !deleted.contains(made.as_slice()) {
                    return Err(error(format!(
                        "the merge makes {}, which is neither in the vocabulary nor deleted",
                        show(&render(&made))
                    )));
                }
            }
        }
    }
    Ok(())
}

fn read_section(lines: &mut Lines) -> Result<Section> {
    let raw = lines.next("the config JSON")?;
    let parsed = (|| -> std::result::Result<(Settings, bool, bool), String> {
        let v: serde_json::Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        let get = |k: &str| v.get(k).ok_or_else(|| format!("missing key '{k}'"));
        let string = |k: &str| {
            get(k)?
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("'{k}' is not a string"))
        };
        let opt_string = |k: &str| -> std::result::Result<Option<String>, String> {
            let x = get(k)?;
            if x.is_null() {
                Ok(None)
            } else {
                x.as_str()
                    .map(|s| Some(s.to_string()))
                    .ok_or_else(|| format!("'{k}' is not a string"))
            }
        };
        let boolean = |k: &str| get(k)?.as_bool().ok_or_else(|| format!("'{k}' is not a boolean"));
        let scripts = match get("script_specific_scripts")? {
            serde_json::Value::Null => None,
            serde_json::Value::Array(a) => Some(
                a.iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_string)
                            .ok_or("script names must be strings".to_string())
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?,
            ),
            _ => return Err("'script_specific_scripts' is not a list".into()),
        };
        let settings = Settings {
            main_regex: string("main_regex")?,
            script_specific_regex: opt_string("script_specific_regex")?,
            script_specific_scripts: scripts,
            merge_pattern: string("merge_pattern")?,
            tau: get("tau")?.as_f64().ok_or("'tau' is not a number")?,
            blowup: boolean("blowup")?,
        };
        Ok((settings, boolean("is_super")?, boolean("superbpe_mode")?))
    })();
    let (settings, is_super, superbpe_mode) =
        parsed.map_err(|e| lines.error(format!("bad config JSON ({e})")))?;
    // the patterns pass the checks of `train(pattern=...)` here, where the error can name this line
    crate::pretokenize::Pretokenizer::new(
        &settings.main_regex,
        settings.script_specific_regex.as_deref(),
        settings.script_specific_scripts.as_deref(),
    )
    .map_err(|e| lines.error(e))?;
    lines.expect("merges")?;
    let n = lines.count("merges")?;
    let mut merges = Merges::with_capacity(lines.room(n, 10));
    let mut merge_at: Vec<usize> = Vec::with_capacity(lines.room(n, 10));
    let mut merge_lines: Vec<usize> = Vec::with_capacity(lines.room(n, 10));
    for _ in 0..n {
        let f = lines.fields(5, "'<index> <left> <right> <count> <flag>'")?;
        if !is_uint(f[0]) || !is_uint(f[3]) || (f[4] != "0" && f[4] != "1") {
            return Err(lines.error("bad merge entry (expected an index, two tokens, a count and 0 or 1)"));
        }
        let index: usize = f[0].parse().map_err(|_| lines.error("merge index too large"))?;
        if let Some(&last) = merge_at.last() {
            if index <= last {
                return Err(lines.error(format!("merge index {index} does not follow {last}")));
            }
        }
        merge_at.push(index);
        merge_lines.push(lines.number);
        merges.push(Merge {
            left: &lines.token(f[1])?,
            right: &lines.token(f[2])?,
            count: f[3].parse().map_err(|_| lines.error("count too large"))?,
            flag: f[4] == "1",
        });
    }
    lines.expect("deletions")?;
    let k = lines.count("deletions")?;
    let mut deletions: Vec<Deletion> = Vec::with_capacity(lines.room(k, 4));
    for _ in 0..k {
        let f = lines.fields(2, "'<index> <token>'")?;
        let index = if is_uint(f[0]) {
            f[0].parse::<usize>().ok()
        } else {
            None
        };
        let index = match index {
            Some(i) if deletions.last().is_none_or(|d| i > d.index) => i,
            _ => {
                return Err(lines.error(format!(
                    "bad deletion index {} (indices must increase)",
                    show(f[0])
                )))
            }
        };
        deletions.push(Deletion {
            index,
            token: lines.token(f[1])?,
        });
    }
    let total = merges.len() + deletions.len();
    if merge_at != merge_indices(merges.len(), &deletions) || deletions.iter().any(|d| d.index >= total) {
        return Err(lines.error(format!(
            "the {} merges and {} deletions above do not use each index 0..{} exactly once",
            merges.len(),
            deletions.len(),
            total as i64 - 1
        )));
    }
    Ok((settings, is_super, superbpe_mode, merges, merge_lines, deletions))
}

/// Read a model file.
pub fn read(path: &str) -> Result<Model> {
    let bytes = std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound(format!("model file not found: {path}"))
        } else {
            Error::Io(format!("cannot read {path}: {e}"))
        }
    })?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::Value(format!("{path}, line {line}: not a model file (invalid UTF-8)"))
    })?;
    loads(text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_like_python() {
        let mut s = String::new();
        json_string("a\\p{L}\"\n\u{e9}\u{1F600}\u{7f}\u{0}/", &mut s);
        assert_eq!(s, r#""a\\p{L}\"\n\u00e9\ud83d\ude00\u007f\u0000/""#);
    }

    #[test]
    fn floats_like_python() {
        // expected strings are Python's repr() of the same floats
        let cases = [
            (1.1, "1.1"),
            (1.0, "1.0"),
            (0.8, "0.8"),
            (1e-05, "1e-05"),
            (0.0001, "0.0001"),
            (2.5e-07, "2.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345678901234567e17, "1.2345678901234566e+17"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-100, "1e-100"),
        ];
        for (x, python) in cases {
            assert_eq!(py_float(x), python, "{x}");
        }
    }
}
