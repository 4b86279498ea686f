//! `--shard K/N`: parsing, and the partition nextest's `--partition count:K/N` makes of the
//! `kernels` binary (sorted names, index mod N), complete and disjoint.

use kernelgate::shard::Shard;
use proptest::prelude::*;
use std::path::Path;

#[test]
fn parses_k_of_n_and_nextest_syntax() {
    assert_eq!("2/4".parse::<Shard>(), Ok(Shard { k: 2, n: 4 }));
    assert_eq!("count:1/1".parse::<Shard>(), Ok(Shard { k: 1, n: 1 }));
    for bad in ["", "3", "0/2", "3/2", "1/0", "a/2", "1/b", "hash:1/2"] {
        let e = bad.parse::<Shard>().unwrap_err();
        assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
    }
    assert_eq!(Shard { k: 3, n: 8 }.to_string(), "3/8");
}

#[test]
fn default_suite_shards_match_nextest_count_partitioning() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = kernelgate::suite::Suite::load(&root.join("fixtures/default.json")).unwrap();
    let mut names: Vec<String> = suite.cases.iter().map(|c| c.name()).collect();
    names.sort();
    for n in 1..=5 {
        let mut seen = Vec::new();
        for k in 1..=n {
            let got: Vec<String> = Shard { k, n }
                .select(suite.cases.clone(), |c| c.name())
                .iter()
                .map(|c| c.name())
                .collect();
            // nextest: the test at index i of the binary's sorted list is in bucket i mod n + 1.
            let want: Vec<String> = names
                .iter()
                .enumerate()
                .filter(|(i, _)| i % n == k - 1)
                .map(|(_, s)| s.clone())
                .collect();
            assert_eq!(got, want, "shard {k}/{n}");
            seen.extend(got);
        }
        seen.sort();
        assert_eq!(seen, names, "shards of {n} cover every case once");
    }
}

proptest! {
    #[test]
    fn shards_are_a_partition(items in proptest::collection::vec("[a-z]{1,6}", 0..60), n in 1usize..9) {
        let mut all = Vec::new();
        for k in 1..=n {
            let part = Shard { k, n }.select(items.clone(), |s| s.clone());
            // Sizes differ by at most one between shards.
            prop_assert!(part.len() <= items.len().div_ceil(n) && part.len() >= items.len() / n);
            all.extend(part);
        }
        let mut want = items.clone();
        want.sort();
        all.sort();
        prop_assert_eq!(all, want);
    }
}
