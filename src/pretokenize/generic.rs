//! Any pre-tokenization pattern without a hand-written matcher, in time linear in the text.
//!
//! A findall restarts a search at each match end.  A backtracking engine, or a DFA that must
//! read on until it dies to know that no longer match exists, makes each search cost the
//! distance it scans, and a pattern such as `a+b|a` or `\w+(?=X)|\w` scans to the end of a
//! run of letters from every position: n² steps over n letters.  Here each search is an
//! anchored walk of a lazy DFA (`regex-automata`, leftmost-first: the match a backtracking
//! engine finds), and the walks share a memo: where a walk read on past its match, the state
//! it was in at a position, with the last match it found from there, is kept (every
//! [`MEMO_EVERY`] positions, for walks that read more than [`MEMO_AFTER`] bytes past their
//! match).  The DFA is deterministic, so a later walk that reaches the same state at the same
//! position would find the same thing, and stops there.  Each (state, position) pair is walked
//! once, which bounds the work by the text's length times the number of DFA states a position
//! sees (usually one or two).
//!
//! A DFA has no look-around, so a pattern may use only what it can run (the rule of
//! [`costly_construct`], the same in `reference/pretokenize.py`).  A look-ahead of one
//! character at the end of a top-level alternative, `A(?=C)` or `A(?!C)`, and an end anchor
//! there, `A$`, `A\Z`, become characters that the alternative reads: `A(?=C)` cuts where the
//! leftmost-first match of `AC` leaves `A`, which is one character before its end; `A(?!C)` is
//! `A` followed by a character outside `C` or by the end of the text, which the walk reads as
//! one more byte, 0xFF (never in UTF-8 text).  Each top-level alternative is a pattern of its
//! own in a multi-pattern DFA (leftmost-first prefers the lower one, as the alternation does),
//! so the walk knows which alternative matched and whether to give back its last character.
//! `A$` (the end, or before a newline that ends the text) may end one or two characters before
//! its match's end; a capture of `A` over that one match tells which.

use crate::error::{Error, Result};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::hybrid::LazyStateID;
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{meta, Anchored, Input, MatchKind};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use thread_local::ThreadLocal;

/// The memo keeps the walk's state at positions that are multiples of this (a later walk that
/// joins an earlier one notices it at most this many bytes later).
pub const MEMO_EVERY: usize = 16;

/// A walk that reads at most this many bytes past where the next search starts is not
/// memoized (its cost is bounded by this anyway; most walks read one byte past their match).
pub const MEMO_AFTER: usize = 64;

/// The lazy DFA's cache, per thread (it is cleared, and the memo with it, when full).
const CACHE_BYTES: usize = 8 << 20;

/// What the end of one top-level alternative reads beyond its match.
enum Tail {
    /// nothing: the match ends where the walk's does
    Plain,
    /// one character, or the end byte (a one-character look-ahead, `\Z`, `\z`, `$` in
    /// multi-line mode)
    OneUnit,
    /// an optional newline and the end byte (`$`): the alternative with its body captured
    Split(meta::Regex),
}

pub struct Generic {
    /// what the pattern is called in errors ("pattern", "script_pattern")
    what: String,
    /// one pattern per top-level alternative (one in all when no alternative has a tail);
    /// boxed, as `Matcher` holds a `Generic`
    dfa: Box<DFA>,
    tails: Vec<Tail>,
    /// does a walk read the end byte after the text?
    end_byte: bool,
    /// boxed: the table of threads is about 500 bytes, and `Matcher` holds a `Generic`
    per_thread: Box<ThreadLocal<RefCell<Scratch>>>,
}

/// The last match a walk found: its alternative and its end (in the text followed by the end
/// byte).
type Found = Option<(u32, usize)>;

struct Scratch {
    cache: Cache,
    /// (state, position) → the last match found walking on from there
    memo: FxHashMap<(LazyStateID, usize), Found>,
    /// the walk's states at the positions the memo keeps ([`MEMO_EVERY`])
    path: Vec<(LazyStateID, usize)>,
    /// the cache's clear count when the memo was last valid
    clears: usize,
}

impl Scratch {
    fn new(dfa: &DFA) -> Scratch {
        Scratch {
            cache: dfa.create_cache(),
            memo: FxHashMap::default(),
            path: Vec::new(),
            clears: 0,
        }
    }
}

fn failed(e: impl std::fmt::Display) -> Error {
    Error::Value(format!("pre-tokenization pattern failed: {e}"))
}

/// The largest [`pattern_size`] a pattern may have (as `reference/pretokenize.py`).
pub const MAX_PATTERN_SIZE: u64 = 100_000;

/// A generous estimate of how many items compiling `pattern` makes, the same rule as the
/// reference's `pattern_size`: an atom counts 1, a counted repeat multiplies what it repeats
/// by its largest number, the items of a group add up.  Patterns come from files people
/// download, and `x{999999999}` must be refused before anything expands it.
pub fn pattern_size(pattern: &str) -> u64 {
    let p: Vec<char> = pattern.chars().collect();
    let n = p.len();
    let mut totals: Vec<u64> = vec![0];
    let mut last: u64 = 0;
    let mut i = 0;
    while i < n {
        let atom;
        match p[i] {
            '\\' => {
                i += 2;
                if i <= n && matches!(p[i - 1], 'p' | 'P' | 'N' | 'x' | 'u' | 'U') && p.get(i) == Some(&'{') {
                    i = p[i..].iter().position(|&c| c == '}').map_or(n, |k| i + k + 1);
                }
                atom = 1;
            }
            '[' => {
                i = set_close(&p, i) + 1;
                atom = 1;
            }
            '(' => {
                totals.push(0);
                last = 0;
                i += 1;
                continue;
            }
            ')' => {
                let inner = if totals.len() > 1 {
                    totals.pop().unwrap_or(0)
                } else {
                    0
                };
                atom = inner.max(1);
                i += 1;
            }
            '{' => {
                if let Some((times, end)) = counted_repeat(&p[i..]) {
                    let top = totals.last_mut().expect("the outermost total stays");
                    *top = top.saturating_add(last.saturating_mul(times.saturating_sub(1)));
                    last = last.saturating_mul(times);
                    i += end;
                    if *top > MAX_PATTERN_SIZE {
                        return *top;
                    }
                    continue;
                }
                atom = 1;
                i += 1;
            }
            _ => {
                atom = 1;
                i += 1;
            }
        }
        let top = totals.last_mut().expect("the outermost total stays");
        *top = top.saturating_add(atom);
        last = atom;
    }
    totals.iter().fold(0u64, |a, &b| a.saturating_add(b))
}

/// The most Unicode property escapes a pattern may write (as `reference/pretokenize.py`).
pub const MAX_PATTERN_CLASSES: usize = 128;

/// How many property escapes (`\p..`, `\P..`, any name) `pattern` writes where they stand,
/// the reference's `property_classes`: the dialect writes each class we hold a table for as
/// its code point ranges (up to ~14 KB), so a file repeating one alternative thousands of
/// times compiled for seconds.  An escaped backslash is skipped; repeats multiply nothing.
pub fn property_classes(pattern: &str) -> usize {
    let p: Vec<char> = pattern.chars().collect();
    let (mut count, mut i) = (0, 0);
    while i < p.len() {
        if p[i] == '\\' {
            count += usize::from(matches!(p.get(i + 1), Some('p' | 'P')));
            i += 2;
        } else {
            i += 1;
        }
    }
    count
}

/// `{m}`, `{m,}`, `{,n}` or `{m,n}` (at least one number) at the start of `p`: the largest
/// number and the length.
fn counted_repeat(p: &[char]) -> Option<(u64, usize)> {
    let digits = |from: usize| from + p[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let value = |d: &[char]| -> u64 {
        if d.len() > 9 {
            1_000_000_000
        } else {
            d.iter().collect::<String>().parse().unwrap_or(0)
        }
    };
    let end1 = digits(1);
    let (first, mut j) = (&p[1..end1], end1);
    let mut second: &[char] = &[];
    if p.get(j) == Some(&',') {
        let end2 = digits(j + 1);
        second = &p[j + 1..end2];
        j = end2;
    }
    if p.get(j) != Some(&'}') || (first.is_empty() && second.is_empty()) {
        return None;
    }
    Some((value(first).max(value(second)), j + 1))
}

impl Generic {
    pub fn new(pattern: &str, what: &str) -> Result<Generic> {
        let size = pattern_size(pattern);
        if size > MAX_PATTERN_SIZE {
            let shown: String = pattern.chars().take(80).collect();
            return Err(Error::Value(format!(
                "{what} is too large to compile: its counted repeats expand to about {size} items (at most {MAX_PATTERN_SIZE}): {shown:?}"
            )));
        }
        let classes = property_classes(pattern);
        if classes > MAX_PATTERN_CLASSES {
            let shown: String = pattern.chars().take(80).collect();
            return Err(Error::Value(format!(
                "{what} is too large to compile: it writes {classes} Unicode property classes (\\p{{..}}, at most {MAX_PATTERN_CLASSES}): {shown:?}"
            )));
        }
        refuse_costly_patterns(pattern, what)?;
        // (in `regex-automata`'s reading of the Python `regex` syntax the pattern is written in)
        let rewritten = super::dialect::to_fancy(pattern, what)?;
        let invalid = |e: &dyn std::fmt::Display| {
            Error::Value(format!("{what} is not a valid regular expression: {e}"))
        };
        let alternatives = split_alternatives(&rewritten);
        let mut patterns = Vec::new();
        let mut tails = Vec::new();
        let end_byte = alternatives.iter().any(|a| a.tail.is_some());
        for a in &alternatives {
            // the alternative alone, as text (it may match only UTF-8)
            syntax::parse(&format!("{}{}", a.flags, a.body)).map_err(|e| invalid(&e))?;
            let (suffix, tail) = match &a.tail {
                None => (String::new(), Tail::Plain),
                Some(TailKind::Dollar) => {
                    let suffix = r"\n?(?-u:\xFF)".to_string();
                    let split = meta::Regex::builder()
                        .syntax(syntax::Config::new().utf8(false))
                        .configure(
                            meta::Regex::config()
                                .utf8_empty(false)
                                .nfa_size_limit(Some(64 << 20)),
                        )
                        .build(&format!("{}({}){suffix}", a.flags, a.body))
                        .map_err(|e| invalid(&e))?;
                    (suffix, Tail::Split(split))
                }
                Some(TailKind::Unit(s)) => (s.clone(), Tail::OneUnit),
            };
            patterns.push(format!("(?:{}{}{suffix})", a.flags, a.body));
            tails.push(tail);
        }
        if !end_byte {
            patterns = vec![rewritten.clone()];
            tails = vec![Tail::Plain];
        }
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::LeftmostFirst)
                    .cache_capacity(CACHE_BYTES)
                    .minimum_cache_clear_count(None),
            )
            .syntax(syntax::Config::new().utf8(!end_byte))
            .thompson(
                thompson::Config::new()
                    .utf8(!end_byte)
                    .nfa_size_limit(Some(64 << 20)),
            )
            .build_many(&patterns)
            .map_err(|e| invalid(&e))?;
        let g = Generic {
            what: what.to_string(),
            dfa: Box::new(dfa),
            tails,
            end_byte,
            per_thread: Box::new(ThreadLocal::new()),
        };
        g.refuse_empty_matches()?;
        Ok(g)
    }

    /// Every match, in order (like the reference's `finditer`); an empty match before the end
    /// of `s` is an error ([`empty_match`]).  Where nothing matches, the character is passed
    /// over, as findall does.
    pub fn for_each<'a>(&self, s: &'a str, emit: &mut impl FnMut(&'a str)) -> Result<()> {
        let cell = self.per_thread.get_or(|| RefCell::new(Scratch::new(&self.dfa)));
        let mut own;
        let mut shared;
        // (a fresh scratch if this thread's is in use, which only a re-entrant `emit` does)
        let sc: &mut Scratch = match cell.try_borrow_mut() {
            Ok(b) => {
                shared = b;
                &mut shared
            }
            Err(_) => {
                own = Scratch::new(&self.dfa);
                &mut own
            }
        };
        sc.memo.clear();
        let bytes = s.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            match self.match_at(sc, bytes, at)? {
                Some(end) if end == at => return Err(empty_match(&self.what, s[..at].chars().count())),
                Some(end) => {
                    emit(&s[at..end]);
                    at = end;
                }
                None => at += utf8_len(bytes[at]),
            }
        }
        sc.memo.clear();
        Ok(())
    }

    /// The end of the match that starts at `p`, if one does.
    fn match_at(&self, sc: &mut Scratch, s: &[u8], p: usize) -> Result<Option<usize>> {
        let Some((alternative, end)) = self.walk(sc, s, p)? else {
            return Ok(None);
        };
        let n = s.len();
        Ok(Some(match &self.tails[alternative as usize] {
            Tail::Plain if end <= n => end,
            Tail::Plain => return Err(failed("a match went past the end of the text")),
            Tail::OneUnit if end > n => n,
            Tail::OneUnit => {
                let mut e = end - 1;
                while e > p && s[e] & 0xC0 == 0x80 {
                    e -= 1;
                }
                e
            }
            Tail::Split(split) => {
                let lo = p.saturating_sub(1); // (one byte before: what `^` and `(?m)^` look at)
                let mut buf = s[lo..end.min(n)].to_vec();
                if end > n {
                    buf.push(0xFF);
                }
                let mut caps = split.create_captures();
                split.search_captures(
                    &Input::new(&buf).span(p - lo..buf.len()).anchored(Anchored::Yes),
                    &mut caps,
                );
                match (caps.get_match(), caps.get_group(1)) {
                    (Some(m), Some(body)) if m.end() + lo == end => body.end + lo,
                    _ => {
                        return Err(failed(
                            "the capture of an alternative ending in $ disagreed with its match",
                        ))
                    }
                }
            }
        }))
    }

    /// An anchored walk of the DFA from `p` over `s` (and the end byte, when a tail reads it)
    /// until the DFA dies or a memo entry says how it goes on: the last match found.
    fn walk(&self, sc: &mut Scratch, s: &[u8], p: usize) -> Result<Found> {
        let dfa = &self.dfa;
        let input = Input::new(s).span(p..s.len()).anchored(Anchored::Yes);
        let mut sid = dfa.start_state_forward(&mut sc.cache, &input).map_err(failed)?;
        if sc.cache.clear_count() != sc.clears {
            sc.memo.clear();
            sc.clears = sc.cache.clear_count();
        }
        let stop = s.len() + usize::from(self.end_byte);
        sc.path.clear();
        let mut last: Found = None;
        let mut joined: Option<Found> = None;
        let mut pos = p;
        loop {
            if pos % MEMO_EVERY == 0 {
                if !sc.memo.is_empty() {
                    if sc.cache.clear_count() != sc.clears {
                        sc.memo.clear();
                    } else if let Some(&found) = sc.memo.get(&(sid, pos)) {
                        joined = Some(found);
                        break;
                    }
                }
                sc.path.push((sid, pos));
            }
            let next = if pos == stop {
                dfa.next_eoi_state(&mut sc.cache, sid).map_err(failed)?
            } else {
                let byte = if pos < s.len() { s[pos] } else { 0xFF };
                dfa.next_state(&mut sc.cache, sid, byte).map_err(failed)?
            };
            if next.is_match() {
                last = Some((dfa.match_pattern(&sc.cache, next, 0).as_u32(), pos));
            }
            if pos == stop || next.is_dead() {
                break;
            }
            if next.is_quit() {
                return Err(failed("the lazy DFA quit"));
            }
            sid = next;
            pos += 1;
        }
        let found = match joined {
            Some(Some(later)) => Some(later),
            _ => last,
        };
        // keep the part of the walk past where the next search starts, when it is long
        let next_start = match found {
            Some((_, end)) if end > p => end,
            _ => p + 1,
        };
        if sc.cache.clear_count() != sc.clears {
            sc.memo.clear();
            sc.clears = sc.cache.clear_count();
        } else if pos > next_start + MEMO_AFTER {
            // walking on from a kept position finds the walk's last match if it ends there or
            // later, else nothing
            for &(state, at) in sc.path.iter().rev() {
                if at < next_start {
                    break;
                }
                let from_here = found.filter(|&(_, end)| end >= at);
                sc.memo.insert((state, at), from_here);
            }
        }
        Ok(found)
    }

    /// Refuse a pattern that matches the empty string in an empty text, or at a character of
    /// [`PROBE`].  Such a pattern cuts nothing there, and findall then goes on differently in
    /// the two engines ([`empty_match`]); this check runs wherever a pattern comes in
    /// (`pattern=`, model files, count files, minbpe and `.tiktoken` patterns,
    /// `tokenizer.json`), so that a door that never pre-tokenizes (training on a count file)
    /// refuses it too.  A pattern can still match nothing only after some other text (a
    /// look-ahead alone); pre-tokenization then raises [`empty_match`].
    fn refuse_empty_matches(&self) -> Result<()> {
        let what = &self.what;
        let mut sc = Scratch::new(&self.dfa);
        if self.match_at(&mut sc, b"", 0)? == Some(0) {
            return Err(Error::Value(format!(
                "{what} matches the empty string (it does in an empty text): every match must hold \
                 at least one character; change the alternatives that can match nothing (such as \\w* \
                 or a look-ahead alone)"
            )));
        }
        for (n, (at, _)) in PROBE.char_indices().enumerate() {
            if self.match_at(&mut sc, PROBE.as_bytes(), at)? == Some(at) {
                return Err(Error::Value(format!(
                    "{what} matches the empty string (it does at character {n} of superword's \
                     probe text): every match must hold at least one character; change the \
                     alternatives that can match nothing (such as \\w* or a look-ahead alone)"
                )));
            }
        }
        Ok(())
    }
}

/// The position of the `]` that closes the set opening at `open` (a `]` first in the set, or
/// after `^`, is a member), or the pattern's length when nothing closes it.
fn set_close(p: &[char], open: usize) -> usize {
    let n = p.len();
    let mut j = open + 1;
    if p.get(j) == Some(&'^') {
        j += 1;
    }
    if p.get(j) == Some(&']') {
        j += 1;
    }
    while j < n && p[j] != ']' {
        j += if p[j] == '\\' { 2 } else { 1 };
    }
    j.min(n)
}

/// Where the atom at `p[i]` ends when it matches exactly one character (a character, an
/// escaped character, a class escape such as `\s` or `\p{L}`, or a set); the same walk as
/// `_one_character_end` in `reference/pretokenize.py`.
fn one_character_end(p: &[char], i: usize) -> Option<usize> {
    let n = p.len();
    let c = *p.get(i)?;
    if c == '\\' {
        let e = *p.get(i + 1)?;
        if matches!(e, 'p' | 'P' | 'x' | 'N') && p.get(i + 2) == Some(&'{') {
            return p[i + 3..].iter().position(|&ch| ch == '}').map(|k| i + 3 + k + 1);
        }
        if matches!(e, 'p' | 'P') {
            return (i + 2 < n).then_some(i + 3);
        }
        let digits = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if digits > 0 {
            return (i + 2 + digits <= n).then_some(i + 2 + digits);
        }
        if "wWdDsSntrfv".contains(e) || !e.is_ascii_alphanumeric() {
            return Some(i + 2);
        }
        return None;
    }
    if c == '[' {
        let j = set_close(p, i);
        return (j < n).then_some(j + 1);
    }
    if "\\^$.|?*+()[]{}".contains(c) {
        return None;
    }
    Some(i + 1)
}

/// Does a top-level alternative end at `p[i]` (a `|` or the end of the pattern)?
fn at_alternative_end(p: &[char], i: usize, depth: usize) -> bool {
    depth == 0 && matches!(p.get(i), None | Some('|'))
}

const END_ANCHOR: &str = r"an end anchor ($, \Z, \z) that is not at the end of a top-level alternative";
const LOOK_AHEAD: &str = "a look-ahead that is not one character at the end of a top-level alternative";

/// The first construct of `pattern` that the linear matcher does not run (its description),
/// or `None`: the same walk as `costly_construct` in `reference/pretokenize.py` (the rule is
/// in its docstring and in docs/algorithm.md, section 8.1).
pub fn costly_construct(pattern: &str) -> Option<&'static str> {
    let p: Vec<char> = pattern.chars().collect();
    let n = p.len();
    let starts = |i: usize, s: &str| s.chars().enumerate().all(|(k, ch)| p.get(i + k) == Some(&ch));
    let (mut i, mut depth) = (0usize, 0usize);
    let mut after_repeat = false; // the last item was a quantifier (a `+` after it is possessive)
    let (mut ending, mut verbose) = (false, false);
    while i < n {
        let c = p[i];
        if c == '\\' {
            let e = p.get(i + 1).copied();
            if e.is_some_and(|e| "123456789g".contains(e)) {
                return Some("a backreference");
            }
            if e.is_some_and(|e| "bBG".contains(e)) {
                return Some(r"a word boundary or search anchor (\b, \B, \G)");
            }
            if e.is_some_and(|e| "Zz".contains(e)) {
                if !at_alternative_end(&p, i + 2, depth) {
                    return Some(END_ANCHOR);
                }
                ending = true;
            }
            i += 2;
            if e.is_some_and(|e| "pPxN".contains(e)) && p.get(i) == Some(&'{') {
                i = p[i..].iter().position(|&ch| ch == '}').map_or(n, |k| i + k + 1);
            }
            after_repeat = false;
            continue;
        }
        if c == '[' {
            i = one_character_end(&p, i).unwrap_or(n);
            after_repeat = false;
            continue;
        }
        if c == '(' {
            after_repeat = false;
            if starts(i, "(?#") {
                i = p[i..].iter().position(|&ch| ch == ')').map_or(n, |k| i + k + 1);
                continue;
            }
            if starts(i, "(?=") || starts(i, "(?!") {
                match one_character_end(&p, i + 3) {
                    Some(end) if p.get(end) == Some(&')') && at_alternative_end(&p, end + 1, depth) => {
                        ending = true;
                        i = end + 1;
                        continue;
                    }
                    _ => return Some(LOOK_AHEAD),
                }
            }
            if starts(i, "(?<=") || starts(i, "(?<!") {
                return Some("a look-behind");
            }
            if starts(i, "(?") {
                let k = p.get(i + 2).copied();
                let after = p.get(i + 3).copied();
                if k == Some('>') {
                    return Some("an atomic group");
                }
                if k == Some('(') {
                    return Some("a conditional group");
                }
                if starts(i, "(?P=")
                    || starts(i, "(?P>")
                    || k.is_some_and(|k| "&R+".contains(k) || k.is_ascii_digit())
                    || (k == Some('-') && after.is_some_and(|a| a.is_ascii_digit()))
                {
                    return Some("a backreference or recursion");
                }
                let mut j = i + 2;
                while j < n && (p[j].is_ascii_alphabetic() || p[j] == '-') {
                    j += 1;
                }
                if j < n && (p[j] == ':' || p[j] == ')') {
                    let on = p[i + 2..j].iter().take_while(|&&ch| ch != '-');
                    if on.clone().any(|&ch| ch == 'x') {
                        verbose = true;
                    }
                }
                i += 2;
            } else {
                i += 1;
            }
            depth += 1;
            continue;
        }
        if c == ')' {
            depth = depth.saturating_sub(1);
            i += 1;
            after_repeat = false;
            continue;
        }
        if c == '$' {
            if !at_alternative_end(&p, i + 1, depth) {
                return Some(END_ANCHOR);
            }
            ending = true;
            i += 1;
            after_repeat = false;
            continue;
        }
        if matches!(c, '*' | '+' | '?') {
            if after_repeat && c == '+' {
                return Some("a possessive quantifier");
            }
            after_repeat = !after_repeat;
            i += 1;
            continue;
        }
        if c == '{' {
            if let Some((_, len)) = counted_repeat(&p[i..]) {
                after_repeat = true;
                i += len;
                continue;
            }
        }
        after_repeat = false;
        i += 1;
    }
    if verbose && ending {
        return Some(r"verbose mode (?x) with a look-ahead or an end anchor ending an alternative");
    }
    None
}

/// Refuse a pattern the linear matcher does not run ([`costly_construct`]), with the same
/// message as the reference.  (The patterns with hand-written matchers never come here.)
pub fn refuse_costly_patterns(pattern: &str, what: &str) -> Result<()> {
    match costly_construct(pattern) {
        Some(found) => Err(Error::Value(format!(
            "{what} uses {found}, which superword does not accept: encoding with it could take \
             time quadratic in the text (docs/algorithm.md, section 8.1)"
        ))),
        None => Ok(()),
    }
}

/// The length of the UTF-8 character that starts with `b`.
fn utf8_len(b: u8) -> usize {
    match b {
        0..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// The text on which every pattern is tried for empty matches before it is used (the same in
/// `reference/pretokenize.py`): a letter of each case, a space, a digit, a newline, a tab, an
/// apostrophe, punctuation, a Han character with a combining mark.
pub const PROBE: &str = "Ab c1\n\t'x, \u{6771}\u{301}.";

/// What ends a top-level alternative, beyond its body.
#[derive(Debug, PartialEq)]
enum TailKind {
    /// one character or the end byte: what the alternative reads for it
    Unit(String),
    /// `$` outside multi-line mode
    Dollar,
}

/// One top-level alternative of a rewritten pattern.
#[derive(Debug)]
struct Alternative {
    /// the flag groups `(?i)` standing at the top level before it (they reach to the end of
    /// the pattern)
    flags: String,
    body: String,
    tail: Option<TailKind>,
}

/// The top-level alternatives of `p` (rewritten by `dialect.rs`, and accepted by
/// [`costly_construct`], so that a look-ahead or an end anchor is an alternative's last item).
fn split_alternatives(p: &str) -> Vec<Alternative> {
    let c: Vec<char> = p.chars().collect();
    let n = c.len();
    let text = |a: usize, b: usize| c[a..b].iter().collect::<String>();
    let mut out = Vec::new();
    let mut flags = String::new();
    let (mut start, mut i) = (0, 0);
    // where the last item of the current alternative starts
    let mut item = 0;
    let mut new_flags = String::new();
    while i <= n {
        if i == n || c[i] == '|' {
            out.push(Alternative {
                flags: flags.clone(),
                body: text(start, i),
                tail: None,
            });
            let a = out.last_mut().expect("just pushed");
            let last = text(item.max(start), i);
            let tail = if last == r"(?=\n?\z)" {
                Some(TailKind::Dollar)
            } else if last == r"\z" {
                Some(TailKind::Unit(r"(?-u:\xFF)".into()))
            } else if last == "$" {
                Some(TailKind::Unit(r"(?:\n|(?-u:\xFF))".into()))
            } else if let Some(inner) = last.strip_prefix("(?=").and_then(|r| r.strip_suffix(')')) {
                Some(TailKind::Unit(format!("(?:{inner})")))
            } else if let Some(inner) = last.strip_prefix("(?!").and_then(|r| r.strip_suffix(')')) {
                let outside = if let Some(rest) = inner.strip_prefix("[^") {
                    format!("[{rest}")
                } else if let Some(rest) = inner.strip_prefix('[') {
                    format!("[^{rest}")
                } else {
                    format!("[^{inner}]")
                };
                Some(TailKind::Unit(format!(r"(?:{outside}|(?-u:\xFF))")))
            } else {
                None
            };
            if tail.is_some() {
                a.body = text(start, item.max(start));
                a.tail = tail;
            }
            flags.push_str(&new_flags);
            new_flags.clear();
            i += 1;
            start = i;
            item = i;
            continue;
        }
        let at = i;
        match c[i] {
            '\\' => {
                i += 2;
                if i <= n && matches!(c[i - 1], 'p' | 'P' | 'x' | 'N') && c.get(i) == Some(&'{') {
                    i = c[i..].iter().position(|&ch| ch == '}').map_or(n, |k| i + k + 1);
                }
                i = i.min(n);
            }
            '[' => {
                i += 1;
                if c.get(i) == Some(&'^') {
                    i += 1;
                }
                while i < n && c[i] != ']' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i = (i + 1).min(n);
            }
            '(' if c.get(i + 1) == Some(&'?') && c.get(i + 2) == Some(&'#') => {
                i = c[i..].iter().position(|&ch| ch == ')').map_or(n, |k| i + k + 1);
            }
            '(' => {
                // a flag group standing alone at the top level reaches the later alternatives
                if c.get(i + 1) == Some(&'?') {
                    let letters = c[i + 2..]
                        .iter()
                        .take_while(|ch| ch.is_ascii_alphabetic() || **ch == '-')
                        .count();
                    if letters > 0 && c.get(i + 2 + letters) == Some(&')') {
                        new_flags.push_str(&text(i, i + 3 + letters));
                        i += 3 + letters;
                        item = at;
                        continue;
                    }
                }
                // the whole group is one item
                let mut d = 0usize;
                while i < n {
                    match c[i] {
                        '\\' => i += 1,
                        '[' => {
                            i += 1;
                            if c.get(i) == Some(&'^') {
                                i += 1;
                            }
                            while i < n && c[i] != ']' {
                                i += if c[i] == '\\' { 2 } else { 1 };
                            }
                        }
                        '(' => d += 1,
                        ')' => {
                            d -= 1;
                            if d == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i = (i + 1).min(n);
            }
            _ => i += 1,
        }
        item = at;
    }
    out
}

/// The error for a pattern that matched the empty string at character `at` of a text (not at
/// its end), the same in the reference.  Python's `regex` then tries again at the same place
/// for a match that is not empty; `fancy-regex` instead searches on from the next character,
/// so the character there would be lost (`(?=a)|\w|\W` cut "xaab" into "x", "b").  Neither
/// backend guesses: an empty match cuts nothing, and a pattern that makes one (an alternative
/// such as `\w*` or a lone look-ahead) is refused where it happens, in both.  (At the end of a
/// text an empty match loses nothing: `\w*` matches there after the last word.)
pub fn empty_match(what: &str, at: usize) -> Error {
    Error::Value(format!(
        "{what} matched the empty string (at character {at} of a text): every match must hold at \
         least one character; change the alternatives that can match nothing (such as \\w* or \
         a look-ahead alone)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'a>(g: &Generic, s: &'a str) -> Vec<&'a str> {
        let mut v = Vec::new();
        g.for_each(s, &mut |p| v.push(p)).unwrap();
        v
    }

    #[test]
    fn every_thread_gets_the_same_pieces_from_its_own_copy() {
        let g = Generic::new(r"\p{L}+(?=\s)|\S+|\s+", "pattern").unwrap();
        let text = "one two, three  four\nfive ";
        let here = pieces(&g, text);
        assert_eq!(
            here,
            ["one", " ", "two,", " ", "three", "  ", "four", "\n", "five", " "]
        );
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| pieces(&g, text))).collect();
            for h in handles {
                assert_eq!(h.join().unwrap(), here);
            }
        });
    }

    #[test]
    fn an_empty_match_is_an_error_unless_at_the_end() {
        // ((?=x) alone: no empty match in the probe text, so only pre-tokenization sees it)
        let g = Generic::new(r"(?=q)|\w|\W", "script_pattern").unwrap();
        let mut v = Vec::new();
        let err = g.for_each("xqqb", &mut |p| v.push(p)).unwrap_err();
        assert_eq!(v, ["x"]); // (the pieces before it were given out)
        assert!(
            err.to_string()
                .starts_with("script_pattern matched the empty string (at character 1 "),
            "{err}"
        );
        // (right after a match too)
        let g = Generic::new(r"\w+|(?=@)|\W", "pattern").unwrap();
        assert_eq!(pieces(&g, "ab "), ["ab", " "]);
        let err = g.for_each("é@", &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("at character 1 "), "{err}");
    }

    #[test]
    fn a_pattern_that_matches_the_empty_string_is_refused_where_it_comes_in() {
        for (p, says) in [
            (r"\w*|\s+", "in an empty text"),
            (r"\w+|\s*", "in an empty text"),
            (r"(?=\s)|\S+|\s", "at character 2 of superword's probe text"),
            (r"[A-Za-z]+|(?=\d)|\s|\W|\d", "at character 4 "),
        ] {
            let e = Generic::new(p, "pattern").err().expect(p).to_string();
            assert!(
                e.starts_with("pattern matches the empty string") && e.contains(says),
                "{p}: {e}"
            );
        }
    }

    #[test]
    fn a_bad_pattern_fails_at_construction() {
        let err = Generic::new(r"(unclosed", "script_pattern").err().unwrap();
        assert!(matches!(err, Error::Value(m) if m.starts_with("script_pattern is not a valid")));
    }

    #[test]
    fn pattern_sizes_as_the_reference_counts_them() {
        // the same values as reference/pretokenize.py's pattern_size (its doctest and
        // tests/test_hostile_files.py)
        assert_eq!(pattern_size(r"\p{L}{1,3}"), 3);
        assert_eq!(pattern_size("(ab{10}){1000}"), 11000);
        assert_eq!(pattern_size("[{]{5}"), 5);
        assert!(pattern_size("x{999999999}") > MAX_PATTERN_SIZE);
        assert!(pattern_size(&format!("x{{{}}}", "9".repeat(5000))) > MAX_PATTERN_SIZE);
        assert!(pattern_size("((x{1000}){1000})") > MAX_PATTERN_SIZE);
        assert_eq!(pattern_size("x{,}"), 4); // not a repeat: four literal characters

        // and property_classes as its doctest counts them
        assert_eq!(property_classes(r"\p{L}+|[\p{N}\pM]|\\p"), 3);
        assert_eq!(property_classes(r"\P{L}{1000}"), 1);
    }

    #[test]
    fn what_the_linear_matcher_refuses() {
        for (p, says) in [
            (r"\w+|(?<=\w)x", "a look-behind"),
            (r"(?:a(?!b))|c", "a look-ahead that is not"),
            (r"a(?!bc)|c", "a look-ahead that is not"),
            (r"(?=a)b|c", "a look-ahead that is not"),
            (r"(a)\1", "a backreference"),
            (r"a++|b", "a possessive quantifier"),
            (r"a{2}+|b", "a possessive quantifier"),
            (r"(?>a)|b", "an atomic group"),
            (r"\bx", "a word boundary"),
            (r"a$b|c", "an end anchor"),
            (r"(?:a$)|c", "an end anchor"),
            (r"(?x) a (?=b)", "verbose mode"),
        ] {
            let e = Generic::new(p, "pattern").err().expect(p).to_string();
            assert!(e.starts_with(&format!("pattern uses {says}")), "{p}: {e}");
        }
        for p in [
            r"a+b|a",
            r"\w+(?=X)|\w|\s+|\W",
            r"a+?(?![a-c])|.",
            r"[(?=]a|\(",
            r"\w+$|\s",
            r"(?#(?=x))a",
        ] {
            assert!(costly_construct(p).is_none(), "{p}");
        }
    }

    #[test]
    fn look_aheads_and_end_anchors_cut_as_a_backtracking_engine_does() {
        for (p, text, want) in [
            (
                r"\w+(?=X)|\w|\s+|\W",
                "aaXa bX",
                &["aa", "X", "a", " ", "b", "X"][..],
            ),
            (r"\s+(?!\S)|\s+|\S+", "a   b  ", &["a", "  ", " ", "b", "  "][..]),
            (r"\w+$|\w|\s", "ab\ncd\n", &["a", "b", "\n", "cd", "\n"][..]),
            (r"\w+$|\s+$|\w|\s", "ab \n", &["a", "b", " \n"][..]),
            (r"(?m)\w+$|\w|\s", "ab\ncd", &["ab", "\n", "cd"][..]),
            (r"\w+\Z|\w|\s", "ab\ncd", &["a", "b", "\n", "cd"][..]),
            (r"(?i)x+(?=y)|.", "XxY", &["Xx", "Y"][..]),
            (r"\p{L}+(?![\p{L}\d])|\S", "ab1 cd", &["a", "b", "1", "cd"][..]),
        ] {
            let g = Generic::new(p, "pattern").unwrap();
            assert_eq!(pieces(&g, text), want, "{p} on {text:?}");
        }
    }

    #[test]
    fn the_memo_makes_a_quadratic_pattern_linear() {
        // each search scans to the end of the run of `a`; with the memo, later searches stop
        // where they join the first one
        let g = Generic::new(r"a+b|a", "pattern").unwrap();
        let text = "a".repeat(200_000) + "b";
        let mut n = 0;
        g.for_each(&text, &mut |p| {
            n += 1;
            assert!(p == "a" || p.len() > 1);
        })
        .unwrap();
        assert_eq!(n, 1);
        let text = "a".repeat(200_000);
        let mut n = 0;
        g.for_each(&text, &mut |_| n += 1).unwrap();
        assert_eq!(n, 200_000);
    }

    #[test]
    fn huge_repeats_are_refused_quickly() {
        for p in ["x{999999999}", "(?=x)x{99999}{2}", "(?:(?:a{1000}){1000})"] {
            let e = Generic::new(p, "pattern").err().expect("refused");
            assert!(e.to_string().contains("pattern is"), "{e}");
        }
    }
}
