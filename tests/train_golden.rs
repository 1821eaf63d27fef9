//! End to end in pure Rust: train the golden corpora with `train::train` (stage 1 included)
//! and compare the models and their encodings, byte for byte, with the paper's
//! implementation (`tests/data/golden/`, see its README for each folder's settings).

mod common;

use common::{golden, texts};
use superword::control::Silent;
use superword::encode::Encoder;
use superword::input::Files;
use superword::model::v2;
use superword::pretokenize::{DEFAULT_SCRIPTS, GPT4O, SCRIPT_SPECIFIC_GPT4O};
use superword::train::bpe::Picky;
use superword::train::{train, Config};

/// A golden folder's settings (see its README).
#[derive(Clone, Copy)]
struct Folder {
    name: &'static str,
    corpus: &'static str,
    vocab_size: usize,
    script_aware: bool,
    greedy: bool,
    tau: f64,
    blowup: bool,
}

const PLAIN: Folder = Folder {
    name: "",
    corpus: "taylorswift_400.jsonl",
    vocab_size: 600,
    script_aware: true,
    greedy: false,
    tau: 1.1,
    blowup: false,
};

/// Train one golden model: `name` is "word", "boundless" or "super"; `m` the number of
/// supermerges that the folder's boundless.model chose.
fn train_like_golden(f: Folder, name: &str, m: usize) -> String {
    let (corpus, vocab_size, script_aware) = (f.corpus, f.vocab_size, f.script_aware);
    let scripts: Vec<String> = DEFAULT_SCRIPTS.iter().map(|s| s.to_string()).collect();
    let (script_pattern, scripts) = if script_aware {
        (Some(SCRIPT_SPECIFIC_GPT4O), Some(&scripts[..]))
    } else {
        (None, None)
    };
    let (vocab_size, algorithm, supermerges) = match name {
        "word" => (vocab_size, "bpe", None),
        "boundless" => (vocab_size, "boundless", None),
        _ => (vocab_size + m, "superbpe", Some(m)),
    };
    let config = Config::new(
        vocab_size,
        algorithm,
        supermerges,
        GPT4O,
        script_pattern,
        scripts,
        f.greedy && name != "word",
        Picky {
            tau: f.tau,
            blowup: f.blowup,
        },
    )
    .unwrap();
    let mut documents = Files {
        paths: vec![golden().join(corpus).to_str().unwrap().to_string()],
        text_field: "text".into(),
        stop: None,
        read_ahead: false,
    };
    let mut stats = Vec::new();
    let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
    let model = train(&mut documents, &config, &pool, &Silent, &mut stats).unwrap();
    let stages: Vec<&str> = stats.iter().map(|(stage, _)| *stage).collect();
    let expected: &[&str] = if name == "word" {
        &["pretokenize_count", "phase1"]
    } else {
        &["pretokenize_count", "phase1", "candidates", "phase2"]
    };
    assert_eq!(stages, expected);
    v2::dumps(&model)
}

fn check_folder(f: Folder) {
    let (folder, corpus) = (f.name, f.corpus);
    let dir = golden().join(folder);
    let boundless = v2::read(dir.join("boundless.model").to_str().unwrap()).unwrap();
    let m = boundless.supermerges.len();
    let texts = texts(corpus);
    for name in ["word", "boundless", "super"] {
        let expected = std::fs::read_to_string(dir.join(format!("{name}.model"))).unwrap();
        let trained = train_like_golden(f, name, m);
        assert!(trained == expected, "{folder}/{name}.model differs");
        // and the trained model encodes every document as the paper's implementation does
        let model = v2::loads(&trained, "trained").unwrap();
        let encoder = Encoder::new(&model, false).unwrap();
        let ids = std::fs::read_to_string(dir.join(format!("{name}.ids.jsonl"))).unwrap();
        let ids: Vec<Vec<u32>> = ids.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(ids.len(), texts.len());
        for (i, (text, want)) in texts.iter().zip(&ids).enumerate() {
            assert_eq!(
                &encoder.encode_ordinary(text).unwrap(),
                want,
                "{folder}/{name}: document {i}"
            );
        }
    }
}

#[test]
fn taylorswift_400_v600() {
    check_folder(Folder {
        name: "taylorswift_400_v600",
        ..PLAIN
    });
}

#[test]
fn taylorswift_400_v600_simple() {
    check_folder(Folder {
        name: "taylorswift_400_v600_simple",
        script_aware: false,
        ..PLAIN
    });
}

#[test]
fn multi_1230_v1500() {
    check_folder(Folder {
        name: "multi_1230_v1500",
        corpus: "multi_1230.jsonl",
        vocab_size: 1500,
        ..PLAIN
    });
}

#[test]
fn multi_1230_v1500_greedy() {
    check_folder(Folder {
        name: "multi_1230_v1500_greedy",
        corpus: "multi_1230.jsonl",
        vocab_size: 1500,
        greedy: true,
        ..PLAIN
    });
}

#[test]
fn taylorswift_all_v2000_simple_greedy() {
    check_folder(Folder {
        name: "taylorswift_all_v2000_simple_greedy",
        corpus: "taylorswift_all.jsonl",
        vocab_size: 2000,
        script_aware: false,
        greedy: true,
        ..PLAIN
    });
}

#[test]
fn taylorswift_400_v600_tau0_9() {
    check_folder(Folder {
        name: "taylorswift_400_v600_tau0.9",
        tau: 0.9,
        ..PLAIN
    });
}

#[test]
fn taylorswift_400_v600_tau0_9_blowup() {
    check_folder(Folder {
        name: "taylorswift_400_v600_tau0.9_blowup",
        tau: 0.9,
        blowup: true,
        ..PLAIN
    });
}

#[test]
fn multi_1230_v1500_tau0_8() {
    check_folder(Folder {
        name: "multi_1230_v1500_tau0.8",
        corpus: "multi_1230.jsonl",
        vocab_size: 1500,
        tau: 0.8,
        ..PLAIN
    });
}
