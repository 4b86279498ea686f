//! Splitting a suite over machines: `kernelgate run --shard K/N` keeps the same cases as
//! `cargo nextest run --partition count:K/N` does for the `kernels` test binary — the cases
//! that pass the filters, sorted by name (the order of the binary's test list), the one at
//! 0-based index `i` going to shard `i mod N + 1` — so CI can shard either way and
//! `kernelgate merge` the shards' results files.

use std::fmt;
use std::str::FromStr;

/// Shard `k` of `n` (1 ≤ k ≤ n).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, counting from 1.
    pub k: usize,
    /// Number of shards.
    pub n: usize,
}

impl FromStr for Shard {
    type Err = String;

    /// Parses `K/N` (also accepts nextest's `count:K/N`).
    fn from_str(s: &str) -> Result<Shard, String> {
        let t = s.strip_prefix("count:").unwrap_or(s);
        let (k, n) = t
            .split_once('/')
            .ok_or_else(|| format!("{s:?}: expected K/N, e.g. 2/4"))?;
        let k: usize = k
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: shard {k:?} is not a number"))?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: shard count {n:?} is not a number"))?;
        if n == 0 || k == 0 || k > n {
            return Err(format!("{s:?}: need 1 ≤ K ≤ N"));
        }
        Ok(Shard { k, n })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl Shard {
    /// The items of this shard: `items` sorted by `name`, every N-th from index K − 1.
    pub fn select<T>(&self, mut items: Vec<T>, name: impl Fn(&T) -> String) -> Vec<T> {
        items.sort_by_key(|x| name(x));
        items
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.n == self.k - 1)
            .map(|(_, x)| x)
            .collect()
    }
}
