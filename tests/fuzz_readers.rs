//! A bounded fuzz run over the readers and the pretokenizer (a few hundred cases, so it runs
//! in every `cargo test`): mutated model files, rank files and patterns must give `Ok` or an
//! error, never a panic, and whatever loads must encode and decode without one.

use std::path::PathBuf;

use superword::encode::Encoder;
use superword::model::v2;
use superword::pretokenize::Pretokenizer;
use superword::ranks;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

const SAMPLES: [&str; 4] = [
    "The quick brown fox, 12345 times!\r\n",
    "今日は良い天気です。 ภาษาไทย",
    "\u{0}\u{7f}\u{feff} e\u{301} 👨‍👩‍👧",
    "",
];

/// Junk that a hostile file might hold in place of a line or a field.
const JUNK: [&str; 12] = [
    "99999999999999",
    "18446744073709551616",
    "-1",
    "",
    " ",
    "x{999999999}",
    "{\"tau\": 0.5}",
    "Ġ",
    "\u{1F600}",
    "deletions",
    "0 a",
    "1 Ġ 0 0",
];

fn golden(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/golden")
        .join(path);
    std::fs::read_to_string(p).unwrap()
}

/// One random change to the lines of `text`.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    for _ in 0..1 + rng.below(3) {
        let i = rng.below(lines.len());
        match rng.below(6) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 => lines[i] = JUNK[rng.below(JUNK.len())].to_string(),
            3 => {
                // replace one space-separated field
                let mut f: Vec<String> = lines[i].split(' ').map(str::to_string).collect();
                let k = rng.below(f.len());
                f[k] = JUNK[rng.below(JUNK.len())].to_string();
                lines[i] = f.join(" ");
            }
            4 => {
                let cut = rng.below(lines[i].len() + 1);
                let cut = (0..=cut)
                    .rev()
                    .find(|&c| lines[i].is_char_boundary(c))
                    .unwrap_or(0);
                lines[i].truncate(cut);
            }
            _ => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
        }
    }
    lines.join("\n")
}

#[test]
fn mutated_model_files_load_or_fail_cleanly() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sources = [
        golden("taylorswift_400_v600_tau0.9/boundless.model"),
        golden("taylorswift_400_v600_simple/super.model"),
        golden("multi_1230_v1500_tau0.8/word.model"),
    ];
    let mut loaded = 0;
    for case in 0..240 {
        let text = mutate(&mut rng, &sources[case % sources.len()]);
        let Ok(model) = v2::loads(&text, "fuzz.model") else {
            continue;
        };
        let Ok(encoder) = Encoder::new(&model, false) else {
            continue;
        };
        loaded += 1;
        for s in SAMPLES {
            if let Ok(ids) = encoder.encode_ordinary(s) {
                let ids: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
                assert_eq!(encoder.decode_bytes(&ids).unwrap(), s.as_bytes(), "case {case}");
            }
        }
    }
    assert!(loaded > 0, "some mutations keep the file valid");
}

#[test]
fn mutated_rank_files_load_or_fail_cleanly() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut base = String::new();
    for b in 0..=255u8 {
        let t = [b];
        base.push_str(&ranks::dumps([(b as u32, &t[..])]));
    }
    base.push_str(&ranks::dumps([(256, &b"th"[..]), (257, &b"the"[..])]));
    for _ in 0..200 {
        let text = mutate(&mut rng, &base);
        let _ = ranks::parse(&text, "fuzz.tiktoken");
    }
}

#[test]
fn random_patterns_compile_or_fail_cleanly_and_pieces_cover_the_text() {
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let atoms = [
        "a", "\\p{L}", "\\s", "[^\\s]", "(", ")", "|", "+", "*", "?", "{2}", "{3,}", "{999999}", "(?=",
        "(?!", "\\d", ".", "x{100}", "[", "]", "(?i:",
    ];
    for case in 0..300 {
        let pattern: String = (0..1 + rng.below(8))
            .map(|_| atoms[rng.below(atoms.len())])
            .collect();
        let Ok(p) = Pretokenizer::new(&pattern, None, None) else {
            continue;
        };
        for s in SAMPLES {
            let mut pieces = Vec::new();
            if p.for_each(s, |piece| pieces.push(piece)).is_ok() {
                // pieces are non-empty slices of the text, in order
                let mut at = 0;
                for piece in pieces {
                    assert!(!piece.is_empty(), "case {case}: {pattern:?}");
                    let start = s[at..].find(piece).expect("pieces come in order") + at;
                    at = start + piece.len();
                }
            }
        }
    }
}
