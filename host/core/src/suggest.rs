//! "Did you mean": the known name nearest to a misspelt one, for errors that list what
//! exists (scopes, `serve` methods).

/// The candidate nearest to `key` by edit distance (a swap of two neighbours counts as one
/// edit), if it is within a third of the key's length (at least one edit).
pub fn closest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let budget = (key.chars().count() / 3).max(1);
    candidates
        .map(|candidate| (distance(key, candidate), candidate))
        .filter(|(d, _)| *d <= budget)
        .min_by_key(|(d, _)| *d)
        .map(|(_, candidate)| candidate.to_string())
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("agnet:1", "agent:1"), 1);
        assert_eq!(distance("agent:2", "agent:1"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert!(distance("preset:coder", "agent:1") > 4);
    }

    #[test]
    fn a_name_too_far_from_every_candidate_has_no_suggestion() {
        assert_eq!(
            closest("sptep", ["step", "render"].into_iter()),
            Some("step".into())
        );
        assert_eq!(closest("xyz", ["step", "render"].into_iter()), None);
    }
}
