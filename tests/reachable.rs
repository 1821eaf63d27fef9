//! The reachable tokens that the encoder finds from the merges' structure (`encode/reach.rs`)
//! are the ones its definition gives, each token's text encoded alone (SPEC 3, rule 1): on
//! every golden model and on models trained here (word, BoundlessBPE, SuperBPE, PickyBPE).

#[allow(dead_code)] // (the corpora's texts are not needed here)
mod common;

use common::golden;
use superword::control::Silent;
use superword::encode::Encoder;
use superword::input::Files;
use superword::model::{v2, Model};
use superword::pretokenize::GPT4O;
use superword::train::bpe::Picky;
use superword::train::{train, Config};

fn check(model: &Model, what: &str) {
    for greedy in [false, true] {
        if greedy && model.ngrams.is_none() {
            continue;
        }
        let encoder = Encoder::new(model, greedy).unwrap();
        let oracle = encoder.reachable_by_encoding(&model.is_super).unwrap();
        let found = encoder.reachable();
        let differ: Vec<usize> = (0..oracle.len()).filter(|&i| oracle[i] != found[i]).collect();
        assert!(
            differ.is_empty(),
            "{what} (greedy {greedy}): tokens {differ:?} differ"
        );
        // (the set is not trivial: most tokens are reachable, some are not)
        assert!(found.iter().any(|&r| r), "{what}");
    }
}

#[test]
fn every_golden_model() {
    let mut seen = 0;
    for dir in std::fs::read_dir(golden()).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for name in ["word", "boundless", "super"] {
            let path = dir.join(format!("{name}.model"));
            let model = v2::read(path.to_str().unwrap()).unwrap();
            check(&model, path.to_str().unwrap());
            seen += 1;
        }
    }
    assert!(seen >= 18, "{seen} golden models");
}

#[test]
fn trained_models() {
    let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
    for corpus in ["taylorswift_400.jsonl", "multi_1230.jsonl"] {
        for (algorithm, vocab_size, supermerges, tau, greedy) in [
            ("bpe", 300, None, 1.1, false),
            ("bpe", 2500, None, 1.1, false),
            ("bpe", 1500, None, 0.7, false),
            ("boundless", 2500, None, 1.1, false),
            ("boundless", 2500, None, 1.1, true),
            ("superbpe", 2500, Some(500), 1.1, false),
            ("superbpe", 1500, Some(300), 0.8, false),
        ] {
            let picky = Picky { tau, blowup: false };
            let config = Config::new(
                vocab_size,
                algorithm,
                supermerges,
                GPT4O,
                None,
                None,
                greedy,
                picky,
            )
            .unwrap();
            let mut documents = Files {
                paths: vec![golden().join(corpus).to_str().unwrap().to_string()],
                text_field: "text".into(),
                stop: None,
                read_ahead: false,
            };
            let model = train(&mut documents, &config, &pool, &Silent, &mut Vec::new()).unwrap();
            assert_eq!(model.ngrams.is_some(), greedy);
            check(
                &model,
                &format!("{corpus} {algorithm} {vocab_size} tau {tau} greedy {greedy}"),
            );
        }
    }
}
