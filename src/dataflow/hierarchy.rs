//! Hierarchical reductions: how `min`/`max` and top-k stay cheap to
//! maintain in large groups.
//!
//! Differential's `reduce` recomputes a group from all of its values
//! whenever one of them changes, so deleting the minimum of a group of
//! 200,000 rows reads 200,000 rows. A hierarchical reduction instead
//! reduces in stages. Every value gets a hash ([`bucket_hash`]); the first
//! stage reduces each `(group, hash mod 2^16)` bucket, the next each
//! `(group, hash mod 2^8)` bucket over the first stage's results (at most
//! 256 of them: the buckets it contains), and the last the group itself over
//! the second stage's results (at most 256). The reduction must be one whose
//! result over a set equals its result over the results of the set's parts
//! (min, max, top-k under a total order). A change then recomputes one
//! bucket per stage: O(group / 2^16 + 2 × 256) values instead of O(group).
//!
//! [`FAN_OUT_256`] has two stages before the group (min/max); [`FAN_OUT_16`]
//! has four (2^16, 2^12, 2^8, 2^4), for reductions whose results are
//! several rows (top-k: a stage reads fan-out × k rows).
//!
//! The price is two arrangements per stage. For large groups the first
//! stage's output is about as large as the input (up to 2^16 buckets per
//! group); for many small groups every stage holds about one row per group,
//! so a view over N one-row groups holds each row once per stage.
//!
//! Owns: bucket hashing and the staging of reductions. Must not: know what
//! is being reduced (callers pass the reduction).

use crate::dataflow::render::RenderTime;
use crate::repr::{Diff, Row};
use differential_dataflow::VecCollection;
use std::hash::{Hash, Hasher};

/// Bits of the bucket hash kept at each stage, from the first (finest) to
/// the last before the group itself: each stage merges 256 buckets of the
/// stage before it.
pub const FAN_OUT_256: &[u32] = &[16, 8];

/// Stages that each merge 16 buckets of the stage before.
pub const FAN_OUT_16: &[u32] = &[16, 12, 8, 4];

/// A hash of a value for bucketing, independent of the hash differential
/// uses to distribute keys among workers (so a group's buckets spread over
/// the workers too). Deterministic: a value's retraction lands in the
/// bucket of its insertion.
pub fn bucket_hash(row: &Row) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    row.hash(&mut h);
    h.finish()
}

/// The bucket of hash `h` at a stage keeping `bits` bits.
pub fn bucket(h: u64, bits: u32) -> u64 {
    h & ((1u64 << bits) - 1)
}

/// Reduces `(group, value)` pairs hierarchically over the given `stages`
/// (bits of the bucket hash kept at each): `stage` reduces the
/// values of one bucket at every stage, `last` those of the whole group
/// (they may differ, e.g. top-k applies its offset only at the end). Both
/// receive values with their multiplicities, sorted by value, and push
/// output values with multiplicities.
pub fn reduce_hierarchical<'s, T: RenderTime, S, L>(
    input: VecCollection<'s, T, (Row, Row), Diff>,
    name: &str,
    stages: &[u32],
    stage: S,
    last: L,
) -> VecCollection<'s, T, (Row, Row), Diff>
where
    S: Fn(&[(&Row, Diff)], &mut Vec<(Row, Diff)>) + Clone + 'static,
    L: Fn(&[(&Row, Diff)], &mut Vec<(Row, Diff)>) + 'static,
{
    let mut staged = input.map(|(key, val)| {
        let h = bucket_hash(&val);
        ((key, h), val)
    });
    for &bits in stages {
        let logic = stage.clone();
        staged = staged
            .map(move |((key, h), val)| ((key, bucket(h, bits)), val))
            .reduce_named(&format!("{name} stage 2^{bits}"), move |_k: &(Row, u64), vals: &[(&Row, Diff)], out: &mut Vec<(Row, Diff)>| {
                logic(vals, out)
            });
    }
    staged
        .map(|((key, _h), val)| (key, val))
        .reduce_named(&format!("{name} by group"), move |_k: &Row, vals: &[(&Row, Diff)], out: &mut Vec<(Row, Diff)>| {
            last(vals, out)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn buckets_nest_from_stage_to_stage() {
        // A bucket at one stage lies inside one bucket of the next: the
        // hierarchy is a tree.
        for i in 0..1000 {
            let h = bucket_hash(&Row::from_datums(vec![Datum::Int32(i)]));
            for stages in [FAN_OUT_256, FAN_OUT_16] {
                for w in stages.windows(2) {
                    assert_eq!(bucket(bucket(h, w[0]), w[1]), bucket(h, w[1]));
                }
            }
        }
    }

    #[test]
    fn buckets_spread_values() {
        // 4096 values over the 16 last-stage buckets: none is empty and
        // none holds more than twice its share.
        let mut counts = [0usize; 16];
        for i in 0..4096 {
            counts[bucket(bucket_hash(&Row::from_datums(vec![Datum::Int32(i)])), 4) as usize] += 1;
        }
        assert!(counts.iter().all(|c| *c > 0 && *c < 512), "{counts:?}");
        // Equal values hash equally; the hash is stable within a process.
        let r = Row::from_datums(vec![Datum::Text("x".into())]);
        assert_eq!(bucket_hash(&r), bucket_hash(&r.clone()));
    }
}
