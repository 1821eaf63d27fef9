//! Training, stage by stage (paper Figure 1), as `reference/train.py`; [`train`] is the
//! whole run, from a stream of documents to a model:
//!
//!   1. pre-tokenize and count (`count.rs`)
//!   2. phase 1, the word model: BPE on the pretokens ([`bpe`], on the merge loop of [`merging`];
//!      sequences of over 65,536 tokens in [`long`])
//!   3. supermerge candidates ([`candidates`]), optionally the greedy n-gram split ([`ngram`])
//!   4. phase 2: BoundlessBPE ([`boundless`]) or SuperBPE ([`superbpe`])
//!
//! Where the time goes (CPU-time samples of `perf`, one thread, vocabulary 32,768, 20 MB of
//! Gutenberg text, after the changes noted in `candidates.rs` and `merging.rs`): for
//! BoundlessBPE, phase 2 30%, counting 20% (about a fifth of it the letter runs), stage 3
//! 18%, phase 1 11%, the kernel zeroing fresh pages ~10% (spread over every stage's tables);
//! phase 2 is three quarters applying merges (rewriting the sequences that hold the pair,
//! then noting new pairs and adding up count changes in the pair tables, all bound by memory
//! latency), the rest building its tables and the heap.  For a small training (185 KB,
//! vocabulary 5,000) half the time is phase 1's merge loop, a tenth counting, 5% building the
//! encoder's reachable set (once for the word model in stage 3, once for the final model:
//! different models, so nothing is built twice), and under 2% the Python side of `train`.
//!
//! Round 3 (issue 12), what keeps two threads from halving a BPE training (100 MB, 32,768,
//! each stage timed at 1 and 2 threads on a shared machine): counting is the parallel part
//! (2.1-2.8 s on one thread); around it ran serially the reading of each block on the
//! calling thread (0.07-0.28 s, now overlapped, see `input.rs`) and the final merge of the
//! worker tables (0.14-0.2 s, now 0.02-0.04 s, see `Counter::finish`).  Phase 1 (0.6-1.0 s)
//! is serial by nature: of its ~32,500 merges only about 100 touch enough words to be
//! rewritten in parallel (0.15-0.2 s of the loop); the rest touch a few words each, and
//! their cost is hash look-ups in the pair table (fewer now, see `GroupChanges`).  So even
//! perfectly shared counting bounds the gain of the second core near 1.6x.  For a small
//! training (taylorswift.txt, 5,000) the Python side is under 1 ms of about 30; building the
//! final model's encoder after training (`Tokenizer::new`) 4-6 ms; fresh memory zeroed by the
//! kernel (huge pages) about a tenth of the samples.  Tried and dropped, no measurable gain:
//! sorting words by count before phase 1 (arena locality), counting a run without boxing it
//! first, and leaving pairs counted once out of the heap (phase 2's heap holds only ~37,000
//! pairs at 100 MB/32,768: the cut candidates keep few).
//!
//! Round 4 (issue 12).  Peak memory: mimalloc 3 keeps freed pages for a second before giving
//! them back, so each stage's freed tables (counting's, phase 1's, the letter runs) stayed
//! resident while the next stage touched its own, and BoundlessBPE's peak RSS (100 MB,
//! 32,768, two threads) varied from 400 to 476 MB between runs; the freed memory now goes
//! back at each stage boundary (`crate::release_freed_memory`), and stage 3 reads the
//! counting tables' runs one table at a time (`candidates.rs`): 360-375 MB.  Small trainings
//! (taylorswift.txt, 5,000, one thread, ~20-30 ms): the final model's encoder is no longer
//! built after training (`Tokenizer::trained`, built on first use), nor the Python side's
//! reference pre-tokenizer for every call.  What is left of such a training: phase 1's merge
//! loop is about half (about 3 µs per merge: the lazy heap's pops and pushes with the SPEC
//! tie-break, pair-table look-ups, rewriting words), counting a sixth, fresh pages zeroed by
//! the kernel and mimalloc's page set-up about a tenth.
//!
//! Round 5 (issue 12), 100 MB/32,768 on the shared 2-core machine (a small VM, loaded by
//! other work: load 1.5-3 throughout, so wall times varied up to 2x between identical runs).
//! Phase 1 (0.5-0.9 s) is almost all merge loop: its set-up (the words as sequences, the
//! pair table, the heap) takes 0.03-0.07 s, so building it in parallel could not pay.  The
//! loop visits 2.5 M sequences over its merges, 46% of them stale (the pair left them
//! earlier), each a cache miss on its span and one on its tokens: those are now prefetched a
//! few sequences ahead (`merging.rs`, loop 0.64-0.72 s -> 0.53-0.56 s on one thread; the
//! same loop is phase 2's, which gained more: BoundlessBPE's 2.05-2.30 s -> 1.30-1.80 s, one
//! thread from a count file; loading spans 8 and tokens 2 sequences ahead instead of 4 and 1
//! made phase 2 slower, 1.68-1.77 s against 1.47-1.54, and spans 2 ahead no different).  The
//! other large cost was not ours: fresh pages cost this VM about 1 ms per MB to zero (a
//! 512 MB touch takes 0.4-0.75 s of system time), and phase 1 touched pages that
//! `release_freed_memory` had just given back: in about half the runs 0.3-0.4 s of system
//! time in phase 1 alone.  So plain BPE no longer releases before phase 1 (its peak RSS 151 ->
//! 174 MB on one thread, 181 -> 205 on two); BoundlessBPE and SuperBPE still do, because
//! without it BoundlessBPE's peak went from 398 to 455 MB at 100 MB/32,768 (quiet machine,
//! target 450).  Why two threads cannot make BPE 1.6x faster here: with counting's own
//! gain at 1.65x (1.50 -> 0.91 s), a serial part P bounds the whole at (1.50 + P) / (0.91 +
//! P), which is under 1.6x for any P above 0.07 s; phase 1 is serial except its ~100 largest
//! merges.  Stage 3 (one thread, from a count file): translating the runs into flat
//! candidates about 1 s, counting the pairs for the cut 0.5 s, cutting and adding up the
//! segments 1.1-1.4 s (hash tables keyed by slices: a cache miss per distinct segment).
//! Tried and dropped: never giving freed memory back (mimalloc's purge off) saves ~0.8 s of
//! system time in a BoundlessBPE run but raises its peak RSS from ~390 to 557 MB (the target
//! is 450); flat segments for phase 2 instead of one box each (1.6 M segments): stage 3's
//! cut 1.04-1.17 s against 1.10-1.15, phase 2's set-up 0.31-0.36 s against 0.34-0.40, peak
//! RSS the same (three interleaved runs each, one thread): no measurable gain.
//!
//! Round 6 (issue 12).  The machine was loaded by other work throughout (load 1.5-3.3), so
//! wall times of small trainings varied by 1.5x between identical runs; small trainings were
//! judged by instruction counts (callgrind, three trainings of taylorswift.txt at 5,000 in
//! one process) and `perf` samples.  SuperBPE and BoundlessBPE spent a sixth of such a
//! training building the word model's encoder in stage 3 (its reachable set: every token
//! encoded), only to ask which words are one token; phase 1's final words are that answer
//! whenever training's words are the encoding (see `train_words`), so the encoder is built
//! only after deletions or a merge that made bytes already known (stage 3: 3.5 -> 0.7 ms for
//! BoundlessBPE, 2.8 -> 0.3 ms for SuperBPE).  Phase 1 of a small BPE training: the heap
//! was a quarter of the merge loop's instructions, now half that (`PairHeap::sift_down`),
//! and the words no longer become a vector each before the arena (phase 1 171.6 M -> 149.4 M
//! instructions for three trainings).  What is left of the merge loop there: rewriting the
//! words ~45% (a third of it adding up the count changes in a hash table), the heap ~20%,
//! the pair table's look-ups ~8%, making the token (`Vocab::add`) ~7%.  Counting costs about
//! a fifth of what phase 1 does.
//! Phase 1 at two threads (20 MB, 32,768, each part timed inside the loop): the merges below
//! `PARALLEL_MERGE` took 0.11-0.15 s at one thread and 0.13-0.19 s at two, the 25 parallel
//! ones 0.013-0.02 s either way, the set-up 0.013 vs 0.021-0.026 s.  From a count file (the
//! same words in the same order at both thread counts) the two were equal; one pair table
//! instead of one per thread, and rewriting the large merges on one thread, changed nothing
//! measurable (0.204-0.214 and 0.207-0.217 s against 0.209-0.218).  So the difference comes
//! with the words counting hands over: their order (the second table's new words come in its
//! hash order) or their memory.  Taking them in the table's first-seen order instead was
//! slower, 0.136-0.159 s of small merges against 0.097-0.125 (three interleaved runs), and
//! was dropped; the cause is still open.  A warning for whoever looks next: two byte-identical
//! count files of 20 MB, trained on one thread in alternation, gave phase 1 0.137-0.173 s for
//! one and 0.198-0.223 s for the other in three runs each (and the reverse order did not
//! swap them), with system time up to 0.17 s in the slow runs: on this VM, where the memory
//! lands (fresh pages, huge pages or not) moves phase 1 by a fifth, more than most changes
//! tried.  Tried and dropped: the count changes of a merge in a hand-written open-addressing
//! table instead of the hash map (3% fewer instructions in phase 1 of a small training,
//! 149.4 M -> 145.1 M, for a hundred lines more); at 100 MB the stage-3 change above is within
//! the noise (BoundlessBPE's candidates stage 2.4-3.6 s either way, one thread, from a count
//! file: building a 32,768-token encoder is small next to the runs).
//!
//! Round 7 (issue 12): BoundlessBPE's and SuperBPE's stages 3 and 4 at 100 MB/32,768.  At the
//! start (release build, from the text, load 1.5-2.2), BoundlessBPE took 3.9 s counting,
//! 0.7 s phase 1, 3.2 s stage 3, 2.5 s phase 2 on one thread (2.4/0.6/2.0/1.3 s on two);
//! SuperBPE 3.3/0.4/1.6/5.1 s on one thread.  Inside them (one thread, timed in the code):
//! BoundlessBPE's stage 3 was flattening the runs 0.4-0.6 s, counting pairs for the cut
//! 0.4-1.25 s, adding up the segments 0.6-1.4 s, boxing them 0.15 s; its phase 2 set-up
//! 0.3-0.5 s and merge loop 1.0-1.7 s.  SuperBPE added its flat candidates up in stage 3
//! (1.1 s, boxes 0.25 s) only to cut and add them up again in phase 2 (cut 1.9-3.5 s, set-up
//! 0.6-1.2 s, loop 0.6-1.2 s; the exact fallback was never needed).  `perf` (one thread, from a
//! count file): a quarter of all samples were the kernel zeroing fresh (huge) pages: the
//! phase-2 pair table growing from 37,507 pairs to 1.12 M (its rehashes, ~0.3 s), the tables
//! of segments growing (~0.3 s), the flats (~0.2 s).  Changes, each measured in its commit:
//! SuperBPE cuts the flat candidates directly and keeps them for the fallback (`superbpe.rs`,
//! stage 3 + phase 2 5.05 -> 4.08 s, one thread); the cut's strong pairs come through a
//! counting filter instead of a table of every pair (`strong_pairs` in `candidates.rs`: the
//! step 0.62-0.79 -> 0.29-0.34 s, and less system time); phase 2 keeps pairs that can never
//! win out of its heap (`MergeState::with_floor`: 1.19 M entries -> 33,374 for BoundlessBPE,
//! its loop 1.23-1.87 -> 0.98-1.33 s); SuperBPE cuts first at four times the smallest merge
//! count, then at half of it, then not at all (`superbpe.rs`: half of it was the only cut
//! before, 1 at 131,072; phase 2 3.44-3.68 -> 1.31-1.47 s on one thread, 7.36 -> 5.14 s at
//! 131,072).  Tried and dropped: not giving freed memory back
//! before phase 2 (its pages would be reused) raised BoundlessBPE's peak RSS to 476-487 MB
//! at two threads (389-443 with it); reserving phase 2's pair table up front (3/4 of the
//! segment count, so that it never rehashes) made its set-up slower (0.40-0.65 s against
//! 0.22-0.44) and the loop no faster (phase 2 1.39-1.80 s against 1.30-1.53, three
//! interleaved runs); the segments' tokens in one arena that phase 2 takes over instead of a
//! box each (no copy): SuperBPE's peak RSS from a count file 707-713 -> 635-639 MB, but user
//! time 3.76-3.86 -> 4.17-4.42 s and BoundlessBPE's phase 2 1.29-1.30 -> 1.39-1.55 s (three
//! interleaved runs, load 1.2), as round 5 found.  What is left: the merge loop of phase 2
//! (serial; its cost is pair-table look-ups per changed pair, bound by memory latency), adding
//! up the segments in tables keyed by slices, and fresh pages, which this VM zeroes at about
//! 1 ms per MB.  An idea for BoundlessBPE, not tried: its cut at `T` is needed only once the
//! regular merges' counts fall to `T`; a cut at a higher `t` is exact while the next regular
//! merge counts at least `t`, then the state would be cut again at `T` with the supermerges
//! replayed (as SuperBPE does), which pays only if most supermerges come early.
//!
//! Round 8 (issue 12): BoundlessBPE at 100 MB.  Stage by stage from a count file (main's
//! release build, load 0.8-1.2): at 32,768 phase 1 0.57 s, stage 3 1.61 s, phase 2 1.36 s on
//! one thread (0.32/1.12/0.89 s on two); at 131,072 0.47/2.74/4.54 s (0.54/2.43/4.66 s on
//! two: phase 2 is serial).  Inside (one thread, timed in the code): stage 3 at 32,768 was
//! flattening the runs 0.58 s, the strong pairs 0.35 s, adding up the segments 0.89-0.93 s,
//! boxing them 0.12 s, then phase 2's set-up 0.31 s and loop ~1.1 s; at 131,072 0.55, 0.72-1.03
//! (399,635 strong pairs over `T` = 3), 0.93-1.32, 0.2-0.45 s, set-up 0.95-1.14 s, loop
//! ~3.6 s.  Round 7's idea, measured with fixed cuts and not built: phase 2 ends when the
//! vocabulary is full, while the regular merges still count well above `T` (84 against 44 at
//! 32,768, 14 against 3 at 131,072), and a cut at that count is exact and cheaper (phase 2
//! 1.31-1.43 -> 0.85-0.92 s at 32,768, 4.61 -> 3.96 s cut at 7 at 131,072; stage 3 no
//! cheaper, 1.95-2.18 against 1.54-2.44 s: flattening and adding up barely shrink).  But the
//! supermerges do not come early: at 32,768 48% of them count above 2`T` and 22% above 4`T`
//! (131,072: 47%, 23%), so a first cut at 2`T` or 4`T` always needs the cut at `T` after it,
//! which costs what the one cut costs now (strong pairs, adding up, boxes and phase 2's
//! set-up: ~1.6 s at 32,768, one thread), more than all of phase 2's loop.  Cutting once at a
//! guess of the final count, with the exact fallback on a miss, fails for want of a guess: the
//! final count was 1.0 (taylorswift.txt at 2,000 and 5,000), 1.15 (ru, 16,384), 1.36 (20 MB,
//! 8,192), 1.75 (de, 32,768), 1.9 (100 MB, 32,768), 2.4 (20 MB, 32,768), 2.75 (zh, 32,768),
//! 3.5 (20 MB, 65,536), 4 (ja, 32,768), 4.7 (100 MB, 131,072) and 7 (th, 8,192) times `T`; a
//! miss costs ~1.6 s where a hit saves ~0.5 s.  What the profile showed instead (`perf`, one
//! thread, 131,072): a tenth of all samples was the kernel zeroing pages for phase 2's pair
//! table, which grew from 0.40 M pairs to 3.65 M (7.3 M buckets) while the heap held under
//! 0.7 M: pairs made by supermerges and counted at most `T` times, which can never win.
//! They now stay out of the table (`MergeState::with_floor`, exact; a merge that makes a
//! token again counts its pairs afresh, which never happened on our corpora): phase 2 at
//! 131,072 4.96-5.49 -> 3.19-4.22 s and peak RSS 938 -> 605 MB, at 32,768 1.29-1.49 ->
//! 1.05-1.12 s (one thread, from a count file, three interleaved runs, load 2.1-2.5);
//! SuperBPE's phase 2 gains a little (131,072: 4.49 -> 3.98 s, one run).  Phase 2's set-up
//! counted the segments' pairs with each thread reading every segment for the pairs of its
//! own shard, so two threads were no faster than one (0.45 against 0.37 s at 32,768, 1.42
//! against 1.16 s at 131,072); the sequences are now counted by parts and the parts' tables
//! added up by shard (`MergeState::with_wholeness`): 0.18-0.21 and 0.80-0.86 s at two
//! threads.  (For phase 1's 244,000 words it makes no measurable difference: BPE's phase 1
//! at 32,768 on two threads from a count file took 0.33-0.48 s with it, 0.36-0.68 s without,
//! the slow runs those with 0.4-0.8 s of system time, in both builds: round 6's warning about
//! where memory lands.)  What is left for BoundlessBPE: counting the text, its largest stage
//! (1.33-1.39 s on two threads against 0.55-0.59 s for BPE, which collects no runs; in `perf`
//! a tenth of a whole training's samples is the kernel zeroing pages while the tables of
//! letter runs grow by rehashing, 2.7 M distinct runs); stage 3's adding up of segments in
//! tables keyed by slices (0.9-1.3 s on one thread); phase 2's set-up on one thread (~1.1 s
//! at 131,072: a hash-table look-up per pair occurrence of 2.6 M segments); and phase 2's
//! loop (rewriting sequences and pair-table look-ups, serial).  At the end of the round
//! (`benchmarks/train_bench.py`, 100 MB, two threads, medians of five interleaved runs, load
//! 1.3-1.5): BoundlessBPE 4.17 -> 3.97 s at 32,768 (BPE 1.00-1.07 s) and 9.93 -> 8.74 s at
//! 131,072 (peak RSS 846 -> 604 MB); SuperBPE 2.75 -> 2.76 s and 6.47 -> 6.03 s.
//!
//! Round 9 (issue 12): small trainings, the target being the Rust core at 50x the reference
//! on taylorswift.txt at 5,000.  Wall times on the shared machine moved by up to half between
//! identical runs, so every change was judged by instructions (callgrind, three trainings in
//! one process, one thread, stages 2-4 only; a release build without LTO).  At the start
//! phase 1 was 188.5 M of BPE's 196.4 M (BoundlessBPE 272.0 M, SuperBPE 272.9 M in all):
//! the merge loop 145 M (rewriting the words 74 M, of which the look-ups in the merge's
//! table of count changes ~20 M; choosing the pair 19.5 M, most of it `sift_down`; heap
//! pushes 9.7 M; `Vocab::add` 7.2 M, three allocations and two hashes per merge), the set-up
//! (the pair table and the words' lists of pairs) 15.6 M; 4,757 merges per training, about
//! 13,000 instructions each.  What helped, phase 1 each time: a merged word rewritten in
//! place instead of built aside and copied back (three `memcpy` calls per word) and no
//! empty changes of long sequences added up per merge, 188.5 -> 177.8 M; the merged pair's
//! own loss added up in a counter (a fifth of the look-ups in the table of changes), ->
//! 174.4 M; heap entries counted once held back in a plain list until nothing better is
//! left (`PairHeap::release`: they deepened the heap every pop and lowering goes through),
//! -> 170.0 M; the merge's sequence list sorted in its small vector (a vector made of it was
//! an allocation per merge) and the merge's changes boxed (moving them out and back was two
//! `memcpy` calls), -> 166.5 M; the set-up's pairs of two bytes counted in a list found
//! through a table indexed by the pair, each put in the hash table once, instead of a hash
//! look-up per occurrence, -> 156.7 M; the merged token's bytes made in a buffer kept for
//! them, -> 154.1 M; a pair that gains found or inserted with one look-up in the pair table
//! (it was looked up, then inserted), -> 152.2 M.  BoundlessBPE's and SuperBPE's models take the word
//! model's merges instead of cloning them (BoundlessBPE's model 7.5 -> 4.4 M, and no 1.5 M
//! drop).  In all: BPE 196.4 -> 160.1 M, BoundlessBPE 272.0 -> 228.6 M, SuperBPE 272.9 ->
//! 230.3 M (-18%, -16%, -16%).  Tried and dropped (totals of stages 2-4 for BPE, the
//! same three trainings): applying the losses of pairs without the merged token straight to
//! the pair table, added up per word in a short list, instead of through the merge's table
//! (one look-up per change instead of two): 185.6 -> 188.0 M, the list's bookkeeping cost
//! more than the look-ups saved; holding back entries counted twice or less instead of once:
//! 182.9 M against 177.8 M (the release, a heapify, comes before the end at 5,000); sifting a
//! pushed entry up through a hole instead of swaps: 182.3 -> 182.5 M; prefix keys built
//! byte by byte instead of with `copy_from_slice` (a `memcpy` call each): -0.3 M, not worth
//! a change; skipping the look-up in the (empty) table of long sequences per word of the
//! set-up: -0.05 M.  What is left: the look-ups in the merge's table of changes and in the
//! pair table (~30% of phase 1 with hashing), the heap (~12%), and
//! `Vocab::add` (`tokens.rs`, 4%).  SuperBPE at 5,000 cuts its candidates twice: the first
//! cut at four times the last merge's count (2) misses, as the 200th supermerge counts 6,
//! and each cut costs ~7.5 M instructions of its ~82 M per training after counting.
//!
//! Round 10 (issue 12): small trainings again, judged the same way (callgrind, a release build
//! without LTO, one thread), on one process running the three trainings of taylorswift.txt at
//! 5,000 (SuperBPE with 200 supermerges) and on one process per training.  At the start,
//! stages 2-4 took 53.6 M instructions for BPE, 76.4 M for BoundlessBPE and 77.0 M for
//! SuperBPE (206.7 M for the three in one process; stage 1, counting, another 17-20 M each).
//! The largest fixed cost outside phase 1 was not in the profile's top lines: `strong_pairs`
//! zeroed a 4 MB filter for every cut (rep-stos `memset`, 4.7 M instructions and 4 MB of
//! fresh pages per cut, for 15,000 tokens of candidates); it is now sized to the source
//! (`candidates.rs`): BoundlessBPE 76.4 -> 72.3 M, SuperBPE 77.0 -> 68.7 M.  What helped
//! after that, each step measured alone (stages 2-4; BPE / BoundlessBPE / SuperBPE where all
//! three moved): SuperBPE's candidates left uncut when they hold fewer than 65,536 tokens
//! (`SMALL_CANDIDATES`: the guessed cut at 8 missed, as round 9 found, and the cut at 1
//! after it cost more than no cut) and its phase 2 taking the word model's vocabulary
//! instead of a clone, SuperBPE 68.7 -> 62.2 M; BoundlessBPE's phase 2 keeping the final
//! vocabulary as ids with a flag per id (it kept byte vectors and a SipHash set of them) and
//! taking the word model's vocabulary, 72.3 -> 64.7 M; `Vocab` with its bytes back to back and
//! a hashbrown table of ids (`tokens.rs`; `Vocab::add` 2.5 -> 0.8 M per training), 53.6 /
//! 64.7 / 62.2 -> 52.1 / 63.6 / 60.8 M; the pair table's shards and the merge's table of
//! changes as hashbrown maps, whose `entry` does not reserve before it looks (the standard
//! map's is an out-of-line call that reserves first), with a pair at zero removed through its
//! entry, -> 47.5 / 58.6 / 55.5 M; the tokens' prefix keys kept in `Vocab` instead of made
//! from the bytes per heap push, -> 46.8 / 57.8 / 54.6 M; a pair's list of sequences inline
//! up to 4 (in the same 24 bytes as 2: 5,479 lists spilled per training), -> 46.0 / 56.8 /
//! 53.6 M; stage 3's tables as hashbrown maps, BoundlessBPE -> 56.4 M; BoundlessBPE and
//! SuperBPE no longer making the word model's vocabulary only to drop it, -> 55.1 / 52.7 M;
//! BoundlessBPE's phase 2 taking each regular merge's token id from phase 1
//! (`WordModel::made`) and SuperBPE's a flag per id, -> 54.5 / 52.65 M (BPE 46.3 M in that
//! build: `train_words` inlined `MergeState::new`, +0.3 M that moves with the inlining).  In
//! all, stages 2-4: BPE 53.6 -> 46.3 M, BoundlessBPE 76.4 -> 54.5 M, SuperBPE 77.0 -> 52.7 M
//! (-14%, -29%, -32%); the three in one process 206.7 -> 153.5 M, the whole process (with
//! counting and Python) 843.5 -> 791.0 M.  Tried and dropped: a merge's first 16 count
//! changes in a short list searched in order before the hash table (most merges change 7
//! pairs, but most changes come from the merges that change many): BPE 52.1 -> 52.4 M;
//! `PairHeap::before` comparing count and left key as one 128-bit key, for sifts without a
//! mispredicted branch (`sift_down` was 12% of a BPE training's `perf` samples against 7% of
//! its instructions): 4.9 -> 6.0 M in `sift_down`, and phase 1 5.30-5.44 ms against
//! 5.35-5.45 (LTO build, medians of 15, three interleaved runs); room made in the set-up's
//! pair tables before the pairs of two bytes go in: -0.09 M.  Wall times at the end (LTO
//! build, one thread, medians of 15 trainings, three interleaved runs; main's build first):
//! BPE 7.3-7.4 -> 7.0 ms, BoundlessBPE 9.5-9.6 -> 8.1-8.3 ms, SuperBPE 9.5-9.7 -> 7.9-8.1 ms,
//! phase 1 5.7-5.8 -> 5.2-5.4 ms, all user time (no page faults in a warm training).
//! `train_bench.py --only-small` the same day: the reference 0.28-0.29 / 0.36 / 0.35-0.36 s,
//! ratios 38 -> 39-40x, 38 -> 43-45x, 36-37 -> 43-44x.  (The README's 51/49/50x were taken
//! with both sides 2-3x slower, the reference at 0.86 s and the Rust core at 16.7 ms for BPE:
//! the reference gained more from today's quieter machine, so the ratio moves with the
//! machine's state, and main's build measures 36-38x today.)
//! Cutting SuperBPE's candidates at the last merge's count (2) instead of not at all was
//! cheaper here (phase 2 8.0 M against 8.8 M) but would miss whenever the 200th supermerge
//! counts 2 or less, then cut again; measured with fixed cuts on 1 MB and 5 MB of Gutenberg
//! (8,192, 512 supermerges, stages 3 and 4, one thread): 1 MB, 160,000 tokens, 17-40 ms with
//! the guessed cuts, 13-15 ms uncut; 5 MB, 756,000 tokens, 27-43 ms cut, 58-62 ms uncut,
//! hence the bound at 65,536.  What is left: phase 1 (BPE's 43.5 M: rewriting the words ~19 M, much of it the
//! look-ups in the table of changes; applying the changes to the pair table, with the heap
//! pushes, ~10 M; choosing the pair, mostly `sift_down`, ~6 M; the set-up ~4 M), and outside
//! this folder counting (17-20 M per training, now a quarter of a BPE training's
//! instructions: the pre-tokenizer and the pretoken table's hashing, `count.rs` and `key.rs`)
//! and the model's vectors of bytes, one per token and two per merge (~2.3 M per training,
//! `model`), which `Model`'s types fix.
//!
//! Round 11 (issue 12), large trainings: 100 MB of Gutenberg, judged by stage times inside the
//! core (medians of three to five interleaved runs, fresh processes; one thread pinned to one
//! core unless said, since this VM's wall times move by up to a third between identical
//! runs, most of it in the kernel's zeroing of fresh pages).  At the start, one thread, 32,768:
//! BPE 0.93 s (counting 0.66), BoundlessBPE 3.47 s (counting 1.50, phase 1 0.26, stage 3
//! 1.14, phase 2 0.55), peak RSS 391 MB.  `perf` showed counting's time in two tables: the
//! pretokens' hashbrown map (a third of BPE's counting, half of it waiting for slots) and the
//! letter runs' map of boxes; and stage 3 adding up segments in maps keyed by slices, then
//! boxing each one for phase 2 to copy.  What helped, each measured in its commit: the runs
//! as records in chunks, found through a table of 8-byte slots and each added once the next
//! run comes, its slot prefetched (`crate::seqs`; counting 1.37 -> 1.09 s of user time, RSS
//! 391 -> 330 MB), with the slots three quarters full instead of half (2.85 -> 2.65 s for the
//! training); stage 3 adding up segments in the same structure (stage 3 1.03 -> 0.87 s, RSS
//! -> 305 MB); the pretokens looked up in a [`crate::key::ByteMap`] a block of 16 at a time,
//! slots prefetched (`count.rs`; BPE's counting 0.66 -> 0.41 s, BPE 0.93 -> 0.68 s,
//! BoundlessBPE 3.03 -> 2.55 s); phase 2 taking the segments as those lists instead of a box
//! each (131,072: 4.58 -> 4.42 s, RSS 490 -> 425 MB).  Tried and dropped: the strong pairs'
//! filter as 16-bit counters with a pair's two in one cache line (stage 3 0.827 against
//! 0.821 s: its first pass is 0.07 s, the exact second pass 0.2 s); a hand-written
//! open-addressing table for that second pass and for the strong set the cut looks pairs up
//! in (slower than hashbrown's: stage 3 0.83 -> 0.92 s, SuperBPE's phase 2 0.70 -> 0.81 s);
//! keeping freed memory instead of giving it back between stages (two threads: no faster,
//! 1.66 against 1.50 s, and peak RSS 487 MB, over the 450 target).
//!
//! Round 11, small trainings (a helper; callgrind, a release build without LTO, one thread,
//! taylorswift.txt at 5,000).  At the start phase 1 took 43.7 M instructions of BPE's 46.1 M
//! for stages 2-4 (BoundlessBPE 54.2 M, SuperBPE 52.4 M): about 9,200 per merge, though a
//! merge visits 8.6 words and rewrites 6 occurrences on average, with no hot spot.  What
//! helped, phase 1 of three trainings in one process each time: an occurrence that stands
//! alone (no other occurrence, no repeat of the pair's tokens and no merged token beside it)
//! changes only its pairs with its two neighbours, added up without windows, 130.6 -> 120.6 M;
//! those losses go straight to the pair table when a merge is rewritten on one thread (they
//! hold no merged token, so they only lose), -> 115.1 M; vectors that grow per merge get
//! their room first, -> 113.8 M; pairs counted once stay out of the tables and the heap
//! (`with_floor(1)`; all pairs counted again if the best pair falls to 1; not with PickyBPE
//! deletions), -> 112.5 M; a pair's sequences sorted only when out of order, -> 111.3 M;
//! `GroupChanges::add_made` inline, -> 109.5 M.  Per training, stages 2-4: BPE 46.1 -> 39.1 M,
//! BoundlessBPE 54.2 -> 47.0 M, SuperBPE 52.4 -> 45.0 M.  Each `superword.train` also started
//! and ended a thread, and each stage that entered the pool switched threads twice; training
//! now runs on a worker of its own pool (`watched_on`, `py/mod.rs`): 0.2-0.3 ms less per
//! training.  `--only-small` (LTO builds, interleaved, the reference at 0.28-0.29 / 0.36-0.37 /
//! 0.35 s): BPE 7.0-7.2 -> 6.2-6.3 ms (39-41x -> 45-46x), BoundlessBPE 8.2-8.3 -> 7.3-7.4 ms
//! (43-44x -> 49-50x), SuperBPE 7.9-8.0 -> 7.1 ms (44x -> 49x).  The floor helps at 100 MB
//! too (BPE's phase 1 0.29 -> 0.21 s, one thread; models identical at 32,768 and 131,072).
//! Tried and dropped (figures in `merging.rs`): a table of changes indexed by the neighbour
//! token, a heap per count below 64, no prefetching on small arenas, the occurrence scan out
//! of line, room made first for new pairs' lists.  What is left of BPE's 6.2 ms: phase 1
//! 4.6 ms (rewriting ~42%, the heap ~16%, applying changes ~13%, the set-up ~12%), counting
//! 1.25-1.3 ms, and ~0.3 ms around the stages (the Python side of `train` ~0.12 ms; dropping
//! the returned tokenizer's `Model`, 14,500 vectors of bytes, ~0.12 ms).
//!
//! Round 12 (issue 12), large trainings: 100 MB of Gutenberg, stage times inside the core
//! (medians of three interleaved runs, fresh processes; two threads, or one pinned thread
//! where said).  At the start, 32,768, two threads: BPE 0.51 s; SuperBPE 1.29 s (counting
//! 0.52, phase 1 0.22, stage 3 0.11, phase 2 0.43: the cut 0.30 s, of which the pair filter
//! 0.05, the exact count of the pairs that pass it 0.09 and adding up the segments 0.16; the
//! set-up 0.04, the merge loop 0.09); BoundlessBPE 1.89 s (stage 3 0.50, phase 2 0.55).  At
//! 131,072 SuperBPE's phase 2 took 2.72 s on one thread: cut at 12 (four times the smallest
//! regular merge's count, 3), its 2.6 M segments took 0.8 s to cut and 1.1-1.2 s to set up,
//! while the 8,192nd supermerge counted 106.  What helped: the pair filter keeps a bit per
//! counter, 128 KB that stay in cache, instead of reading its 4 MB of counters, and SuperBPE
//! cuts where the filter alone shows a pair weak, without the exact count (a pass over the
//! 16.2 M tokens less, for 3% more segments): SuperBPE's phase 2 0.43 -> 0.36 s, BoundlessBPE's
//! stage 3 0.50 -> 0.45 s (`candidates.rs`, [`candidates::Cutting`]); SuperBPE's first cut at a
//! threshold read from the filter's counters ([`candidates::Threshold::Guess`]: half the
//! `4n`-th largest counter, within a tenth of the `n`-th supermerge's count at 8,192, 32,768
//! and 131,072), one thread: 131,072 phase 2 2.72 -> 1.21 s and the training 4.47 -> 2.50 s,
//! peak RSS 518 -> 319 MB; 8,192 phase 2 0.94 -> 0.31 s (the old guess, 1,804, missed a
//! 512th supermerge of 1,300 and cut twice); 32,768 unchanged (186 against 196); counting's
//! letter runs listed as they come instead of added up in a table (`count.rs`, `TableRuns`):
//! BoundlessBPE's counting 0.92-1.17 -> 0.68-0.78 s on one pinned core, its stage 3 +0.03-0.09
//! s for the repeats it now reads.  At the end, two threads, the builds before and after the
//! round interleaved (medians of three): BPE 0.53 -> 0.48 s, SuperBPE 1.36 -> 1.08 s,
//! BoundlessBPE 1.86 -> 1.65 s.  Tried and
//! dropped: BoundlessBPE cutting where the filter alone shows a pair weak (stage 3 0.45 ->
//! 0.41 s, but 1.73 M segments made phase 2 0.54 -> 0.63 s; at 131,072, where `T` is 3, the
//! filter tells almost nothing); reading the candidates from the letter runs in each pass
//! instead of writing them out in stage 3 (one thread: SuperBPE's stage 3 0.14 -> 0.07 s but
//! its phase 2 0.61 -> 0.72 s, BoundlessBPE's stage 3 0.80 -> 0.95 s: every pass translates
//! 17 M pretokens through a map where the written candidates are read in order); the runs
//! packed, LEB128 ids in byte records (96 -> ~60 MB of records, counting's peak RSS 239 ->
//! 201 MB on one thread; but whole trainings were slower, counting 0.75 -> 0.79 s and
//! BoundlessBPE's stage 3 0.83 -> 0.92 s: packing every run and unpacking them cost more than
//! the fresh pages saved); a tighter guess (32,768, one thread: phase 2 0.58 s cut at 186,
//! 0.52 at 280, 0.46 at 370, where a miss costs a second cut, ~0.5 s: the margin of two
//! stays); for SuperBPE, keeping freed memory between stages, or transparent huge pages off
//! (`prctl`): no faster; loading the record a held-back segment's slot points to before it is
//! added (`perf` put 60% of `SeqCounter::flush`'s samples on reading that record), one or two
//! segments ahead: slower, two threads, SuperBPE's phase 2 0.36-0.37 -> 0.39-0.40 s and
//! BoundlessBPE's stage 3 0.50-0.51 -> 0.58-0.59 s.
//!
//! Round 12, small trainings (a helper; callgrind, a release build without LTO, one thread,
//! taylorswift.txt at 5,000; each figure is one warm `superword.train` call with its Python
//! side and the drop of the tokenizer, two trainings in one process less one).  At the start:
//! BPE 54.7 M instructions, BoundlessBPE 65.5 M, SuperBPE 62.4 M.  The largest cost outside
//! the core was the documents' way in: a list of `str` passed through two Python generators,
//! each document encoded to UTF-8 once more for the provenance's byte count; the core now
//! counts documents and bytes as it reads them (`train_docs`, `py/mod.rs`): 54.7 / 65.5 /
//! 62.4 -> 51.8 / 62.4 / 59.4 M, BPE's counting stage 1.02-1.08 -> 0.85-0.87 ms.  The model's
//! bytes lie back to back (`ByteStrings`, `Merges`; a `Vec<u8>` per token and two per merge
//! were ~14,500 allocations made after training and freed with the tokenizer), -> 50.1 /
//! 60.9 / 57.9 M, and dropping the tokenizer 0.13 -> 0.004 ms; without deletions the final
//! vocabulary is the word model's bytes copied whole, -> 49.99 / 60.83 / 57.71 M.  In the
//! merge loop: the merged pair's heap entry, gone after the merge, takes the merge's first
//! push (`PairHeap::retire_top`), -> 49.78 / 60.67 / 57.52 M; a floor of 1 drops the entries
//! held back instead of building the heap again (`drop_at_most`), -> 49.48 / 60.04 / 57.17 M.
//! In all -9.5%, -8.3%, -8.6%; the three trainings in one process 760.0 -> 744.0 M, stages
//! 2-4 133.1 -> 125.3 M.  Wall times (LTO builds, one thread pinned, interleaved with main's
//! build, load 2.0-2.5): BPE 6.04-6.23 -> 5.64-5.73 ms with the drop (phase 1 4.68-4.80 ->
//! 4.56-4.62 ms); `--only-small` BPE 6.1-6.3 -> 5.7-5.9 ms (48-49x -> 51-53x), BoundlessBPE
//! 7.3-7.5 -> 7.0-7.1 ms (52-53x -> 53-56x), SuperBPE 7.2 -> 6.7-6.9 ms (52-53x -> 54-58x).
//! Tried and dropped: `Vocab` keeping its bytes in a `ByteStrings` (BPE 50.14 -> 50.40 M: the
//! merge loop inlined differently).  What is left of BPE's ~5.7 ms: phase 1 4.6 ms (the
//! heap's `sift_down` ~15% of `perf`'s samples against ~10% of instructions, a branch the data
//! decides; the heap holds 2,100-6,000 entries, 35-60% live), counting 0.85 ms, and ~0.19 ms
//! outside the stages, most of it Python running on caches the training emptied (the
//! provenance's `strftime` alone ~30 µs after a training, 2 µs warm).
//!
//! Round 13 (issue 12), 100 MB of Gutenberg, two threads, builds interleaved (medians).
//! Counting: a timeline of BPE's batches at 32,768 showed the workers idle about 0.05 of
//! 0.27 s: waiting for the first 32 MB block (0.03 s), for the calling thread to split each
//! block into lines (8-10 ms between batches), and for the slower share of a batch (up to 40%
//! slower, its bytes holding more new pretokens).  Now the first block is 1 MB and blocks
//! double (`crate::input`), the reader finds the lines, and each worker takes pieces of a batch
//! as it goes (`crate::count`): counting 0.273 -> 0.251 s (nine runs).  Blocks are 8 MB instead
//! of 32: `perf` put 0.1 s of CPU time on the kernel zeroing the block buffers' pages under
//! `read`, and counting took 0.353 -> 0.263 s, peak RSS 215 -> 167 MB (nine runs, a noisy
//! hour).  Stage 3 adds up segments of two tokens in a table of pairs (`candidates::aggregate`:
//! half of SuperBPE's segments, few distinct): SuperBPE's phase 2 0.380 -> 0.369 s,
//! BoundlessBPE's peak RSS 306 -> 290 MB.  SuperBPE's first cut is at three quarters of the
//! filter's `4n`-th counter instead of half (`candidates::guess`, with the 47 trainings behind
//! it): phase 2 0.414 -> 0.336 s at 32,768 and 0.933 -> 0.726 s at 131,072.  Where SuperBPE's
//! time goes now at 32,768: counting 0.30 s, phase 1 0.23, stage 3 0.11, phase 2 0.34 (the
//! filter 0.05, cutting and adding up the segments 0.18-0.20 at the old guess, set-up 0.05, the
//! merge loop 0.1).  Phase 1 is serial: BPE's merges at 32,768 take 0.2 s on one thread or two;
//! merges of fewer than `PARALLEL_MERGE` words (almost all of them) spend 0.10 s rewriting
//! and 0.05 s applying the changes, on the calling thread.  Tried and dropped: a lower
//! `PARALLEL_MERGE` (1,024: 0.20 s, the same; 256: 0.23-0.26 s: rewriting a few hundred words
//! on two threads costs more than it saves); the records of a `.jsonl` file parsed by the
//! reader thread instead of between batches (100 MB as JSONL: counting 0.381 -> 0.380 s, peak
//! RSS +20 MB: on two cores the reader's parsing takes the workers' time); a pair's two filter
//! counters in one word from one multiplication (SuperBPE's phase 2 0.385 -> 0.394 s, noise).
//! Kept instead: the records parsed by the workers, each in the pieces it takes
//! (`crate::input::Batch`): the same 100 MB as JSONL, BPE, counting 0.367 -> 0.310 s (five
//! runs), and on more cores parsing no longer waits on one thread.

pub mod boundless;
pub mod bpe;
pub mod candidates;
pub mod long;
pub mod merging;
pub mod ngram;
pub mod superbpe;

use std::time::Instant;

use rayon::prelude::*;

use crate::control::Control;
use crate::count::{count_documents, Counts};
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::input::Documents;
use crate::model::{Deletion, Kind, Merge, Merges, Model, Settings};
use crate::pretokenize::{Pretokenizer, MERGE_PATTERN};
use crate::tokens::ngram::MAX_NGRAM;
use crate::tokens::{ByteStrings, TokenId, Vocab};
use boundless::{train_boundless, Boundless};
use bpe::{train_words, Picky, WordModel};
use candidates::{cut, cut_runs, flat_candidates, supermerge_candidates, CutCandidates, Cutting, Threshold};
use merging::TrainMerge;
use ngram::{frequent_ngrams, greedy_split, MIN_COUNT_FLOOR};
use superbpe::{train_superbpe, SuperCandidates};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Bpe,
    Boundless,
    /// SuperBPE with this many supermerges
    SuperBpe(usize),
}

/// What to train: the arguments of `superword.train` after checking.
pub struct Config {
    pub vocab_size: usize,
    pub algorithm: Algorithm,
    /// the settings the model file records
    pub settings: Settings,
    pub pretokenizer: Pretokenizer,
    pub greedy_split: bool,
    /// PickyBPE deletions in phase 1 (SPEC 9)
    pub picky: Picky,
}

impl Config {
    /// `algorithm` is "bpe", "boundless" or "superbpe" (which needs `supermerges`);
    /// `script_pattern` and `scripts` as for [`Pretokenizer::new`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        vocab_size: usize,
        algorithm: &str,
        supermerges: Option<usize>,
        pattern: &str,
        script_pattern: Option<&str>,
        scripts: Option<&[String]>,
        greedy_split: bool,
        picky: Picky,
    ) -> Result<Config> {
        if !(picky.tau.is_finite() && picky.tau > 0.0) {
            return Err(Error::Value(format!(
                "tau must be a positive number (1.1, the default, turns PickyBPE deletions off), got {}",
                picky.tau
            )));
        }
        let algorithm = match (algorithm, supermerges) {
            ("bpe", _) => Algorithm::Bpe,
            ("boundless", _) => Algorithm::Boundless,
            ("superbpe", Some(n)) => Algorithm::SuperBpe(n),
            _ => return Err(Error::Value(format!("unknown algorithm {algorithm:?}"))),
        };
        let pretokenizer = Pretokenizer::new(pattern, script_pattern, scripts)?;
        let settings = Settings {
            main_regex: pattern.to_string(),
            script_specific_regex: script_pattern.map(str::to_string),
            script_specific_scripts: pretokenizer.scripts.clone(),
            merge_pattern: MERGE_PATTERN.to_string(),
            tau: picky.tau,
            blowup: picky.blowup,
        };
        Ok(Config {
            vocab_size,
            algorithm,
            settings,
            pretokenizer,
            greedy_split,
            picky,
        })
    }
}

/// Seconds spent in each stage, in order (the paper's Table 1 breakdown).
pub type Stats = Vec<(&'static str, f64)>;

fn to_bytes(vocab: &Vocab, merges: &[TrainMerge]) -> Merges {
    let mut out = Merges::with_capacity(merges.len());
    for m in merges {
        out.push(Merge {
            left: vocab.bytes(m.pair.0),
            right: vocab.bytes(m.pair.1),
            count: m.count,
            flag: m.flag,
        });
    }
    out
}

/// The bytes of the tokens `order` lists, in that order (the final vocabulary): most often
/// all of `vocab`'s in id order (no deletions), then copied whole.
fn ordered_bytes(vocab: &Vocab, order: &[TokenId]) -> ByteStrings {
    if order.len() == vocab.len() && order.iter().enumerate().all(|(i, &t)| i == t as usize) {
        return vocab.strings();
    }
    let mut out = ByteStrings::with_capacity(order.len());
    for &t in order {
        out.push(vocab.bytes(t));
    }
    out
}

fn deletions_to_bytes(vocab: &Vocab, deletions: &[(usize, TokenId)]) -> Vec<Deletion> {
    deletions
        .iter()
        .map(|&(index, t)| Deletion {
            index,
            token: vocab.bytes(t).to_vec(),
        })
        .collect()
}

fn word_model(settings: &Settings, w: &WordModel) -> Model {
    Model {
        kind: Kind::Word,
        settings: settings.clone(),
        vocab: ordered_bytes(&w.vocab, &w.order),
        counts: w.order.iter().map(|&t| w.counts[t as usize]).collect(),
        is_super: vec![false; w.order.len()],
        merges: to_bytes(&w.vocab, &w.merges),
        supermerges: Merges::default(),
        special_tokens: Vec::new(),
        ngrams: None,
        deletions: deletions_to_bytes(&w.vocab, &w.deletions),
    }
}

/// The BoundlessBPE model from phase 2's result; `merges` and `deletions` are the word
/// model's, moved and cut to what phase 2 used.  (Cloning the word model's merges, two
/// vectors of bytes each, was a tenth of BoundlessBPE's and SuperBPE's work after phase 1
/// on a small training.)
fn boundless_model(
    config: &Config,
    (mut merges, mut deletions): (Merges, Vec<Deletion>),
    b: Boundless,
    ngrams: Option<Vec<Vec<Vec<u8>>>>,
) -> Model {
    merges.truncate(b.used);
    deletions.truncate(b.deletions_used);
    Model {
        kind: Kind::Boundless,
        settings: config.settings.clone(),
        vocab: ordered_bytes(&b.phase2_vocab, &b.order),
        counts: b.order.iter().map(|&t| b.counts[t as usize]).collect(),
        is_super: b.is_super,
        merges,
        supermerges: to_bytes(&b.phase2_vocab, &b.supermerges),
        special_tokens: Vec::new(),
        ngrams,
        deletions,
    }
}

/// The whole training run: stage 1 reads `documents` on the calling thread (so that a Python
/// iterator is read, and Ctrl-C seen, on Python's thread); all parallel work runs on `pool`.
/// `stats` receives the seconds spent in each stage.
pub fn train(
    documents: &mut dyn Documents,
    config: &Config,
    pool: &rayon::ThreadPool,
    control: &dyn Control,
    stats: &mut Stats,
) -> Result<Model> {
    // 1. pre-tokenize and count pretokens (and letter runs, for phase 2)
    let clock = Instant::now();
    let with_runs = config.algorithm != Algorithm::Bpe;
    let counts = count_documents(documents, &config.pretokenizer, with_runs, pool, control)?;
    stats.push(("pretokenize_count", clock.elapsed().as_secs_f64()));
    pool.install(|| train_counted(counts, config, control, stats))
}

/// Stages 2 to 4 on counts made earlier (a count file), on `pool`: the same model as
/// [`train`] on the text that was counted.
pub fn train_counts(
    counts: Counts,
    config: &Config,
    pool: &rayon::ThreadPool,
    control: &dyn Control,
    stats: &mut Stats,
) -> Result<Model> {
    pool.install(|| train_counted(counts, config, control, stats))
}

/// Stages 2 to 4, on the current rayon pool.
fn train_counted(counts: Counts, config: &Config, control: &dyn Control, stats: &mut Stats) -> Result<Model> {
    let (words, runs) = (counts.words, counts.runs);
    let words_len = words.len();
    // (before each stage, the tables the last one freed go back to the system: see
    // `release_freed_memory`.  Before phase 1 only when a phase 2 follows: pages given back
    // cost the kernel's zeroing again when touched, which took 0.3-0.4 s of phase 1's time
    // at 100 MB in about half the runs; but without the release BoundlessBPE's peak RSS at
    // 100 MB/32,768 went from 398 to 455 MB, over its 450 MB target, while plain BPE's peak
    // is far below any limit.)
    if config.algorithm != Algorithm::Bpe {
        crate::release_freed_memory(words_len);
    }
    if words.iter().all(|(w, c)| w.is_empty() || *c == 0) {
        return Err(Error::Value(
            "the corpus is empty: no document contains any text".into(),
        ));
    }

    // 2. phase 1: BPE on the aggregated pretokens
    let clock = Instant::now();
    let phase1_size = match config.algorithm {
        Algorithm::SuperBpe(n) => config.vocab_size - n,
        _ => config.vocab_size,
    };
    let singles = config.algorithm != Algorithm::Bpe;
    let mut word = train_words(&words, phase1_size, config.picky, singles, control)?;
    if config.algorithm == Algorithm::Bpe {
        let model = word_model(&config.settings, &word);
        stats.push(("phase1", clock.elapsed().as_secs_f64()));
        return Ok(model);
    }
    // the final models keep the word model's merges and deletions; its vocabulary and counts
    // are made only for an encoder (below).  (Round 10: made and dropped, they were 5,000
    // vectors and 0.9-1.3 M instructions of a small training, taylorswift.txt at 5,000.)
    let word_parts = (
        to_bytes(&word.vocab, &word.merges),
        deletions_to_bytes(&word.vocab, &word.deletions),
    );
    stats.push(("phase1", clock.elapsed().as_secs_f64()));

    // 3. supermerge candidates: letter runs cut at pretokens that are not single tokens
    let clock = Instant::now();
    crate::release_freed_memory(words_len);
    // each word's token when it is eligible: phase 1's final words when they are the word
    // model's encoding (see `train_words`), else encoded.  (Building the encoder and its
    // reachable set was about a sixth of a small training, 185 KB at 5,000.)
    let token_of: Vec<Option<TokenId>> = match word.single.take() {
        Some(single) => single,
        None => {
            let encoder = Encoder::new(&word_model(&config.settings, &word), false)?;
            // (the encoder's ids are the final vocabulary's; training's are `word.order`'s)
            words
                .par_iter()
                .map(|(w, _)| {
                    encoder
                        .single_token(w.as_bytes())
                        .map(|id| word.order[id as usize])
                })
                .collect()
        }
    };
    drop(words);
    // phase 2 of BoundlessBPE cuts the candidates at pairs that count no more than any
    // regular merge (see boundless.rs); without the greedy split, straight from the runs.
    // Without deletions the smallest count is the last merge's.
    let threshold = word.min_merge_count();
    let last_count = word.merges.last().map(|m| m.count);
    let n_tokens = word.vocab.len();
    let mut ngrams = None;
    // (progress reports the number of candidates, or of segments when cut from the runs, or
    // for SuperBPE without the greedy split the number of candidates before adding up)
    let (candidates, reported) = match (config.algorithm, threshold) {
        (Algorithm::Boundless, Some(t)) if !config.greedy_split => {
            // (exact: the filter's cut was cheaper, stage 3 0.45 -> 0.41 s at 100 MB/32,768 on two
            // threads, but left 1.73 M segments that phase 2 paid more for, 0.54 -> 0.63 s)
            let cut = cut_runs(runs, &token_of, Threshold::At(t), n_tokens, Cutting::Exact)?;
            let n = cut.len();
            (Stage3::Cut(cut), n)
        }
        (Algorithm::SuperBpe(_), _) if !config.greedy_split => {
            // phase 2 cuts them, added up as segments (see `FlatCandidates`)
            let flat = flat_candidates(runs, &token_of);
            let n = flat.len();
            (Stage3::Whole(SuperCandidates::Flat(flat)), n)
        }
        _ => {
            let mut candidates = supermerge_candidates(runs, &token_of)?;
            if config.greedy_split {
                let min_count = last_count.unwrap_or(0).max(MIN_COUNT_FLOOR);
                let table: rustc_hash::FxHashSet<Box<[TokenId]>> =
                    frequent_ngrams(&candidates, min_count, MAX_NGRAM)
                        .into_keys()
                        .collect();
                candidates = greedy_split(candidates, &table);
                let mut rendered: Vec<Vec<Vec<u8>>> = table
                    .iter()
                    .map(|g| g.iter().map(|&t| word.vocab.bytes(t).to_vec()).collect())
                    .collect();
                rendered.sort();
                ngrams = Some(rendered);
            }
            let n = candidates.len();
            let stage3 = match (config.algorithm, threshold) {
                (Algorithm::Boundless, Some(t)) => {
                    Stage3::Cut(cut(&candidates, Threshold::At(t), n_tokens, Cutting::Exact)?)
                }
                (Algorithm::Boundless, None) => Stage3::Cut(CutCandidates::uncut(candidates)),
                _ => Stage3::Whole(SuperCandidates::Added(candidates)),
            };
            (stage3, n)
        }
    };
    drop(token_of);
    control.progress("candidates", reported as u64, reported as u64)?;
    stats.push(("candidates", clock.elapsed().as_secs_f64()));

    // 4. phase 2
    let clock = Instant::now();
    crate::release_freed_memory(words_len);
    let model = match (config.algorithm, candidates) {
        (Algorithm::Boundless, Stage3::Cut(candidates)) => {
            // (the word model's vocabulary moves: cloning it was 1.6 M instructions of a small
            // training, taylorswift.txt at 5,000)
            let vocab = std::mem::take(&mut word.vocab);
            let b = train_boundless(&word, vocab, candidates, control)?;
            boundless_model(config, word_parts, b, ngrams)
        }
        (Algorithm::SuperBpe(n), Stage3::Whole(candidates)) => {
            // the first cut is at a guess of the supermerges' counts (see
            // `candidates::guess`): if they fall that low, the candidates are cut again at a
            // quarter of it, and so on, then not at all (any threshold gives the same model).  Few
            // candidates are not cut at all (see `SMALL_CANDIDATES`).
            let first_cut = match threshold {
                Some(_) if candidates.tokens() >= SMALL_CANDIDATES => Some(Threshold::Guess(n)),
                _ => None,
            };
            let order_len = word.order.len();
            let s = train_superbpe(word.vocab, &word.order, candidates, n, first_cut, control)?;
            Model {
                kind: Kind::SuperBpe,
                settings: config.settings.clone(),
                vocab: ordered_bytes(&s.vocab, &s.order),
                counts: s.order.iter().map(|&t| s.counts[t as usize]).collect(),
                is_super: (0..s.order.len()).map(|i| i >= order_len).collect(),
                merges: word_parts.0,
                supermerges: to_bytes(&s.vocab, &s.supermerges),
                special_tokens: Vec::new(),
                ngrams,
                deletions: word_parts.1,
            }
        }
        _ => unreachable!("stage 3 makes the candidates phase 2 needs"),
    };
    stats.push(("phase2", clock.elapsed().as_secs_f64()));
    Ok(model)
}

/// SuperBPE's candidates holding fewer tokens than this are not cut before phase 2: the
/// guessed cut (see `train_counted`) pays on large corpora, but on a small one its set-up
/// costs more than the merges it saves, and when it misses the candidates are cut twice.
/// (Round 10, one thread: taylorswift.txt at 5,000, 14,821 tokens in 3,007 candidates, missed
/// the cut at 8 (the 200th supermerge counts 6) and cut again at 1: SuperBPE's phase 2 took
/// 13.4 M instructions, uncut 8.8 M.  Stages 3 and 4 at 8,192 with 512 supermerges: on
/// 1 MB of Gutenberg, 160,000 tokens, 17-40 ms cut, 13-15 ms uncut; on 5 MB, 756,000
/// tokens, 27-43 ms cut and 58-62 ms uncut.)
const SMALL_CANDIDATES: usize = 1 << 16;

/// Stage 3's result: candidates cut for BoundlessBPE, or whole for SuperBPE (which cuts them
/// itself, with a fallback).
enum Stage3 {
    Cut(CutCandidates),
    Whole(SuperCandidates),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Silent;
    use crate::pretokenize::GPT4O;
    use crate::tokens::BASE_VOCAB;

    #[test]
    fn phase_one_singles_are_the_encoders_eligible_words() {
        // short words over a few letters, trained until the pairs run out; with PickyBPE
        // deletions phase 1 leaves the words to the encoder
        let picky = Picky {
            tau: 1.1,
            blowup: false,
        };
        let config = Config::new(600, "boundless", None, GPT4O, None, None, false, picky).unwrap();
        let mut rng = crate::XorShift(0x0DDB_1A5E_5BAD_5EED);
        let (mut given, mut refused) = (0, 0);
        for round in 0..300 {
            let letters = &b"abcdef"[..2 + round % 5];
            let mut words: Vec<(Box<str>, u64)> = (0..150)
                .map(|_| {
                    let len = 1 + rng.below(10) as usize;
                    let w: String = (0..len)
                        .map(|_| letters[rng.below(letters.len() as u64) as usize] as char)
                        .collect();
                    (w.into(), 1 + rng.below(6))
                })
                .collect();
            words.sort();
            words.dedup_by(|a, b| a.0 == b.0);
            let size = 250 + rng.below(1000) as usize;
            let picky = Picky {
                tau: if round % 3 == 0 { 0.5 } else { 1.1 },
                blowup: false,
            };
            let mut word = train_words(&words, size, picky, true, &Silent).unwrap();
            let Some(single) = word.single.take() else {
                assert!(!word.deletions.is_empty() || word.vocab.len() < BASE_VOCAB + word.merges.len());
                refused += 1;
                continue;
            };
            given += 1;
            let mut settings = config.settings.clone();
            settings.tau = picky.tau;
            let encoder = Encoder::new(&word_model(&settings, &word), false).unwrap();
            for ((w, _), got) in words.iter().zip(single) {
                let expected = encoder
                    .single_token(w.as_bytes())
                    .map(|id| word.order[id as usize]);
                assert_eq!(got, expected, "round {round}, word {w:?}");
            }
        }
        assert!(given > 150 && refused > 50, "{given} given, {refused} refused");
    }
}
