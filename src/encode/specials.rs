//! Special tokens (SPEC 7.1): cutting a text at the ones a call allows, and their text by id.
//!
//! A call names the special tokens it allows; cutting at them scans the text once with an
//! Aho-Corasick automaton in leftmost-longest mode, which is the rule of SPEC 7.1 (the
//! earliest occurrence wins, and of those that start at one position the longest).  Building
//! the automaton costs time in the number of tokens, so an encoder keeps the automata of the
//! last few sets it was asked for: a model with 200,000 special tokens spent 44 s per
//! `encode(..., allowed_special="all")` looking for each of them from each position, and
//! would spend a few hundred milliseconds per call building the automaton anew.

use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::tokens::TokenId;

/// How many sets of allowed tokens an encoder keeps the automata of.  (Python keeps the
/// policies of up to 64 argument values, but most programs use one or two sets.)
const KEPT: usize = 8;

/// The special tokens of an encoder.
pub struct Specials {
    /// (text, id), in the model's order
    tokens: Vec<(String, TokenId)>,
    /// index into `tokens` by id, for decoding
    by_id: FxHashMap<TokenId, usize>,
    /// the automata made for recent calls, the most recently used last
    kept: Mutex<Vec<Arc<Automaton>>>,
}

/// The automaton of the allowed tokens `names` (`None` when none of them is a special token).
struct Automaton {
    names: Vec<String>,
    found: Option<(AhoCorasick, Vec<TokenId>)>,
}

/// The special tokens one call recognises, ready to cut texts at (see [`Specials::allowed`]).
#[derive(Clone, Default)]
pub struct Allowed(Option<Arc<Automaton>>);

/// A stretch of text between special tokens, or a special token's id.
pub enum Part<'a> {
    Text(&'a str),
    Special(TokenId),
}

impl Specials {
    pub fn new(tokens: Vec<(String, TokenId)>) -> Specials {
        let by_id = tokens.iter().enumerate().map(|(i, (_, id))| (*id, i)).collect();
        Specials {
            tokens,
            by_id,
            kept: Mutex::new(Vec::new()),
        }
    }

    /// The bytes of the special token `id`, if there is one.
    pub fn text(&self, id: i64) -> Option<&[u8]> {
        let i = *self.by_id.get(&u32::try_from(id).ok()?)?;
        Some(self.tokens[i].0.as_bytes())
    }

    /// The ids of all special tokens, ascending (for error messages).
    pub fn ids(&self) -> Vec<TokenId> {
        let mut ids: Vec<TokenId> = self.tokens.iter().map(|(_, id)| *id).collect();
        ids.sort_unstable();
        ids
    }

    /// The special tokens among `names`, ready to cut texts at; names that are not special
    /// tokens are ignored.
    pub fn allowed(&self, names: &[String]) -> Result<Allowed> {
        if names.is_empty() || self.tokens.is_empty() {
            return Ok(Allowed(None));
        }
        // (a poisoned lock only means a thread panicked while holding it: the list is whole)
        let lock = || self.kept.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut kept = lock();
            if let Some(i) = kept.iter().position(|a| a.names == names) {
                let automaton = kept.remove(i);
                kept.push(automaton.clone());
                return Ok(Allowed(Some(automaton)));
            }
        }
        // built with the lock released: building for many tokens takes a while, and a
        // process forked meanwhile must not inherit a held lock (two threads may both build;
        // either automaton is right)
        let wanted: FxHashSet<&str> = names.iter().map(String::as_str).collect();
        // an empty token would match everywhere and cut nothing; none can be registered
        let (patterns, ids): (Vec<&str>, Vec<TokenId>) = self
            .tokens
            .iter()
            .filter(|(s, _)| !s.is_empty() && wanted.contains(s.as_str()))
            .map(|(s, id)| (s.as_str(), *id))
            .unzip();
        let found = if patterns.is_empty() {
            None
        } else {
            let automaton = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .map_err(|e| Error::Value(format!("cannot match {} special tokens: {e}", patterns.len())))?;
            Some((automaton, ids))
        };
        let automaton = Arc::new(Automaton {
            names: names.to_vec(),
            found,
        });
        let mut kept = lock();
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push(automaton.clone());
        Ok(Allowed(Some(automaton)))
    }
}

impl Clone for Specials {
    /// The same tokens, with no automata kept yet.
    fn clone(&self) -> Specials {
        Specials::new(self.tokens.clone())
    }
}

impl Allowed {
    /// No special token: every text is one stretch of text.
    pub fn none() -> Allowed {
        Allowed(None)
    }

    /// Cut `text` at the allowed special tokens (SPEC 7.1) and hand each part to `emit`, in
    /// order; an empty text has no parts.
    pub fn split<'a>(&self, text: &'a str, mut emit: impl FnMut(Part<'a>) -> Result<()>) -> Result<()> {
        let mut start = 0;
        if let Some((automaton, ids)) = self.0.as_ref().and_then(|a| a.found.as_ref()) {
            // (the tokens are whole UTF-8 strings, so every match starts and ends at a
            // character boundary of `text`)
            for found in automaton.find_iter(text) {
                if found.start() > start {
                    emit(Part::Text(&text[start..found.start()]))?;
                }
                emit(Part::Special(ids[found.pattern().as_usize()]))?;
                start = found.end();
            }
        }
        if start < text.len() {
            emit(Part::Text(&text[start..]))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(specials: &Specials, names: &[&str], text: &str) -> Vec<String> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        specials
            .allowed(&names)
            .unwrap()
            .split(text, |part| {
                out.push(match part {
                    Part::Text(t) => format!("text {t:?}"),
                    Part::Special(id) => format!("special {id}"),
                });
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn the_earliest_then_the_longest_special_token_wins() {
        let s = Specials::new(vec![("<a>".into(), 10), ("<a>x".into(), 11), ("a>x>".into(), 12)]);
        assert_eq!(
            cut(&s, &["<a>", "<a>x"], "1<a>x>2"),
            ["text \"1\"", "special 11", "text \">2\""]
        );
        // the earliest occurrence wins over a longer one that starts later
        assert_eq!(cut(&s, &["<a>", "a>x>"], "<a>x>"), ["special 10", "text \"x>\""]);
        // a token that is not allowed is text, even where it is the longest
        assert_eq!(
            cut(&s, &["<a>"], "<a>x<a>"),
            ["special 10", "text \"x\"", "special 10"]
        );
        assert_eq!(cut(&s, &[], "<a>"), ["text \"<a>\""]);
        assert_eq!(cut(&s, &["<a>"], ""), Vec::<String>::new());
    }

    #[test]
    fn automata_are_kept_per_set_of_names() {
        let s = Specials::new(vec![("<a>".into(), 1), ("<b>".into(), 2)]);
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let first = s.allowed(&names(&["<a>"])).unwrap();
        let again = s.allowed(&names(&["<a>"])).unwrap();
        assert!(Arc::ptr_eq(first.0.as_ref().unwrap(), again.0.as_ref().unwrap()));
        let other = s.allowed(&names(&["<a>", "<b>"])).unwrap();
        assert!(!Arc::ptr_eq(first.0.as_ref().unwrap(), other.0.as_ref().unwrap()));
        for i in 0..KEPT + 3 {
            s.allowed(&names(&[&format!("<{i}>")])).unwrap();
        }
        assert_eq!(s.kept.lock().unwrap().len(), KEPT);
        assert_eq!(s.text(2), Some(&b"<b>"[..]));
        assert_eq!(s.text(3), None);
        assert_eq!(s.text(-1), None);
    }
}
