//! OpenAI's BPE encodings (`o200k_base`, `cl100k_base`), counted with their split patterns
//! rewritten without lookahead, on the chunks [`super::cuts`] makes.
//!
//! tiktoken (Python, and `tiktoken-rs` here) splits text with fancy-regex and unwraps the
//! result: a run of about a million spaces or tabs overflows fancy-regex's backtracking
//! stack and panics, under the 1 MiB a plugin may return. The patterns below are the
//! encodings' own with their one lookahead removed (and cl100k's possessive quantifiers
//! written as the greedy ones they are equivalent to where they stand); fancy-regex hands such
//! a pattern whole to the `regex` crate, which runs in linear time and cannot fail. On the
//! chunks they give the pieces the original patterns give on the whole text, and each piece
//! is byte-pair encoded by tiktoken's own merge loop (a heap for pieces of 100 bytes or more,
//! so a megabyte-long piece costs n log n). The count is thus tiktoken's wherever tiktoken can
//! count, and the same definition (the encoding's pieces, each encoded exactly) where it
//! cannot.
//!
//! The encoding without lookahead is built from tiktoken-rs's (its rank map read back through
//! the public decoder), which triples the time an encoding takes to load (o200k: ~110 →
//! ~310 ms). On the chunks, tiktoken-rs's own pattern gives the same pieces, and it only
//! backtracks far over a chunk's trailing run of whitespace: chunks whose trailing run is at
//! most [`LONG_RUN`] characters are encoded by tiktoken-rs as loaded, and the encoding without
//! lookahead is built the first time a longer one is met. A deployment whose text has no such
//! run never pays for it.

use std::sync::OnceLock;

use anyhow::anyhow;
use tiktoken_rs::{CoreBPE, Rank};

use super::cuts;

/// `o200k_base`'s split pattern (`tiktoken_rs::O200K_BASE_PAT_STR`) with its last two
/// branches, `\s+(?!\S)|\s+`, as `\s+`.
const O200K_WITHOUT_LOOKAHEAD: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+",
);

/// `cl100k_base`'s split pattern, `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
/// ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`, with `\s+(?!\S)|\s` as `\s+`
/// and its possessive quantifiers as greedy ones. Giving back never helps what follows them,
/// so a greedy quantifier matches what the possessive one does: a non-letter given back
/// cannot start `\p{L}+`, punctuation given back is not `[\r\n]`, whitespace given back
/// cannot reach the end; the others end their branch.
const CL100K_WITHOUT_LOOKAHEAD: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)",
    r"|[^\r\n\p{L}\p{N}]?\p{L}+",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"|\s+$",
    r"|\s*[\r\n]",
    r"|\s+",
);

/// The longest trailing run of whitespace a chunk may end with to be split by tiktoken-rs's
/// own pattern: fancy-regex backtracks once per character of it, and gives up at about a
/// million; a hundredth of that leaves the margin.
const LONG_RUN: usize = 10_000;

/// A built-in encoding, ready to count.
pub(super) struct Encoding {
    /// tiktoken-rs's, as it loads: its pattern has the lookahead.
    original: CoreBPE,
    /// The number of ordinary tokens (the ranks `0..n`).
    ordinary_tokens: Rank,
    /// The pattern without lookahead.
    pattern: &'static str,
    /// The same ranks with `pattern`, built on first need (see the module's description).
    without_lookahead: OnceLock<Result<CoreBPE, String>>,
}

impl Encoding {
    /// `o200k_base`.
    pub(super) fn o200k_base() -> anyhow::Result<Self> {
        Ok(Self::new(
            tiktoken_rs::o200k_base()?,
            199_998,
            O200K_WITHOUT_LOOKAHEAD,
        ))
    }

    /// `cl100k_base`.
    pub(super) fn cl100k_base() -> anyhow::Result<Self> {
        Ok(Self::new(
            tiktoken_rs::cl100k_base()?,
            100_256,
            CL100K_WITHOUT_LOOKAHEAD,
        ))
    }

    fn new(original: CoreBPE, ordinary_tokens: Rank, pattern: &'static str) -> Self {
        Encoding {
            original,
            ordinary_tokens,
            pattern,
            without_lookahead: OnceLock::new(),
        }
    }

    /// The encoding that splits `chunk` safely: tiktoken-rs's own unless the chunk ends
    /// with a run of whitespace longer than [`LONG_RUN`].
    fn for_chunk(&self, chunk: &str) -> anyhow::Result<&CoreBPE> {
        let trailing = chunk
            .chars()
            .rev()
            .take(LONG_RUN + 1)
            .take_while(|c| c.is_whitespace())
            .count();
        if trailing <= LONG_RUN {
            return Ok(&self.original);
        }
        self.without_lookahead
            .get_or_init(|| {
                let ranks =
                    ranks(&self.original, self.ordinary_tokens).map_err(|e| e.to_string())?;
                // No special tokens: text is counted as plain text (see the parent module).
                CoreBPE::new(
                    ranks.into_iter().collect(),
                    Default::default(),
                    self.pattern,
                )
                .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| anyhow!("cannot build the encoding without lookahead: {e}"))
    }

    /// The number of tokens of `text` as plain text.
    pub(super) fn count(&self, text: &str) -> anyhow::Result<usize> {
        cuts::chunks(text).try_fold(0, |sum, chunk| {
            Ok(sum + self.for_chunk(chunk)?.encode_ordinary(chunk).len())
        })
    }

    /// The tokens of `text` as plain text (for the tests, which compare them with
    /// tiktoken's).
    #[cfg(test)]
    fn encode(&self, text: &str) -> Vec<Rank> {
        cuts::chunks(text)
            .flat_map(|chunk| {
                self.for_chunk(chunk)
                    .expect("the encoding builds")
                    .encode_ordinary(chunk)
            })
            .collect()
    }
}

/// The ordinary tokens of `original` and their ranks, read back through its public decoder
/// (`tiktoken-rs` keeps its rank map to itself): ranks `0..expected`, each an ordinary token,
/// none a special one.
fn ranks(original: &CoreBPE, expected: Rank) -> anyhow::Result<Vec<(Vec<u8>, Rank)>> {
    let specials = original.special_tokens();
    let mut ranks = Vec::with_capacity(expected as usize);
    for rank in 0..expected {
        let bytes = original
            .decode_bytes(&[rank])
            .map_err(|e| anyhow!("rank {rank} has no token: {e}"))?;
        if std::str::from_utf8(&bytes).is_ok_and(|text| specials.contains(text)) {
            return Err(anyhow!("rank {rank} is a special token"));
        }
        ranks.push((bytes, rank));
    }
    // The next rank is not an ordinary token: the map is whole.
    if let Ok(bytes) = original.decode_bytes(&[expected]) {
        if !std::str::from_utf8(&bytes).is_ok_and(|text| specials.contains(text)) {
            return Err(anyhow!("more than {expected} ordinary tokens"));
        }
    }
    Ok(ranks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Ours and tiktoken-rs's own, per encoding, loaded once for all the tests.
    fn pair(name: &str) -> &'static (Encoding, CoreBPE) {
        static O200K: OnceLock<(Encoding, CoreBPE)> = OnceLock::new();
        static CL100K: OnceLock<(Encoding, CoreBPE)> = OnceLock::new();
        type Load<T> = fn() -> anyhow::Result<T>;
        let (cell, ours, original): (_, Load<Encoding>, Load<CoreBPE>) = match name {
            "o200k_base" => (&O200K, Encoding::o200k_base, tiktoken_rs::o200k_base),
            _ => (&CL100K, Encoding::cl100k_base, tiktoken_rs::cl100k_base),
        };
        cell.get_or_init(|| (ours().expect("loads"), original().expect("loads")))
    }

    #[test]
    fn the_o200k_pattern_is_tiktokens_without_its_lookahead() {
        let upstream = tiktoken_rs::O200K_BASE_PAT_STR;
        let without = upstream
            .strip_suffix(r"|\s+(?!\S)|\s+")
            .expect("its last branches");
        assert_eq!(O200K_WITHOUT_LOOKAHEAD, format!(r"{without}|\s+"));
    }

    #[test]
    fn a_million_spaces_count_as_the_pieces_they_are() {
        // tiktoken-rs panics on each of these. A run of spaces is encoded 128 to a token;
        // the pieces are the run less its last space, then " x" (one token).
        for name in ["o200k_base", "cl100k_base"] {
            let (ours, _) = pair(name);
            let run = " ".repeat(999_999);
            assert_eq!(
                ours.count(&format!("{run} x")).ok(),
                Some(7_813 + 1),
                "{name}"
            );
            assert_eq!(ours.count(&run).ok(), Some(7_813), "{name}");
        }
    }

    #[test]
    fn both_ways_of_splitting_agree_where_one_takes_over() {
        // Runs just under and over the switch to the pattern without lookahead, which
        // tiktoken-rs still counts: the tokens are the same either way.
        for name in ["o200k_base", "cl100k_base"] {
            let (ours, original) = pair(name);
            for n in [LONG_RUN - 1, LONG_RUN, LONG_RUN + 1, LONG_RUN + 2] {
                for text in [
                    format!("{} x", " ".repeat(n)),
                    format!("a\n{}word", "\t".repeat(n)),
                    format!("end:{}", " \u{3000}".repeat(n / 2 + 1)),
                    " ".repeat(n),
                ] {
                    assert_eq!(
                        ours.encode(&text),
                        original.encode_ordinary(&text),
                        "{name}, a run of {n}"
                    );
                }
            }
        }
    }

    /// Runs of the characters a split pattern treats apart, of lengths from 1 to 300.
    fn adversarial() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            Just(" "),
            Just("\t"),
            Just("\n"),
            Just("\r\n"),
            Just("\r"),
            Just("\u{a0}"),
            Just("\u{3000}"),
            Just("\u{b}"),
            Just("\u{85}"),
            Just("\u{2028}"),
            Just("a"),
            Just("Z"),
            Just("é"),
            Just("日本"),
            Just("\u{301}"),
            Just("7"),
            Just("!"),
            Just("/"),
            Just("'s"),
            Just("'ſ"),
            Just("👍🏽"),
        ];
        let run = (atom, prop_oneof![3 => 1..4usize, 1 => 1..300usize])
            .prop_map(|(atom, n)| atom.repeat(n));
        proptest::collection::vec(run, 0..12).prop_map(|runs| runs.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn tokens_equal_tiktoken_rs_on_adversarial_text(text in adversarial()) {
            for name in ["o200k_base", "cl100k_base"] {
                let (ours, original) = pair(name);
                prop_assert_eq!(ours.encode(&text), original.encode_ordinary(&text), "{}", name);
            }
        }

        #[test]
        fn every_chunk_is_encoded_as_tiktoken_rs_encodes_it_alone(text in adversarial()) {
            for name in ["o200k_base", "cl100k_base"] {
                let (ours, original) = pair(name);
                for chunk in cuts::chunks(&text) {
                    prop_assert_eq!(ours.encode(chunk), original.encode_ordinary(chunk), "{}", name);
                }
            }
        }
    }
}
