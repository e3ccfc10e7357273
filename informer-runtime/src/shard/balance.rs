//! Pure rules of sharding: the stable key hash, lease names, who should hold how many
//! shards, and which shards a replica prefers.

use informer_core::ObjectKey;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bits.
#[derive(Clone, Copy)]
pub(crate) struct Fnv1a(u64);

impl Fnv1a {
    pub(crate) fn new() -> Self {
        Self(FNV_OFFSET)
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}

/// FNV-1a 64 of the key's string form (`namespace/name`, or `name`), without allocating.
pub(crate) fn key_hash(key: &ObjectKey) -> u64 {
    let mut h = Fnv1a::new();
    if let Some(ns) = key.namespace() {
        h.write(ns.as_bytes());
        h.write(b"/");
    }
    h.write(key.name().as_bytes());
    h.finish()
}

/// The name of shard `shard`'s Lease.
pub(crate) fn shard_lease_name(prefix: &str, shard: u32) -> String {
    format!("{prefix}-{shard}")
}

/// The prefix of membership Lease names.
pub(crate) fn member_prefix(prefix: &str) -> String {
    format!("{prefix}-member-")
}

/// The name of `identity`'s membership Lease: the identity's FNV-1a 64 in hex, so any
/// identity gives a valid name of fixed length.
pub(crate) fn member_lease_name(prefix: &str, identity: &str) -> String {
    let mut h = Fnv1a::new();
    h.write(identity.as_bytes());
    format!("{}{:016x}", member_prefix(prefix), h.finish())
}

/// How many shards `me` should hold when `live` (sorted, distinct, `me` included)
/// replicas share `shards`: `shards / live` each, and one more for the first
/// `shards % live` identities in sorted order. The targets of all live replicas sum
/// to `shards` and differ by at most one. `me` missing from `live` counts as last.
pub(crate) fn target(shards: u32, live: &[&str], me: &str) -> u32 {
    let count = u32::try_from(live.len()).unwrap_or(u32::MAX).max(1);
    let base = shards / count;
    let extra = shards % count;
    let index = live
        .iter()
        .position(|id| *id == me)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(u32::MAX);
    base + u32::from(index < extra)
}

/// The rendezvous score of (`identity`, `shard`): each replica prefers shards with high
/// scores, so replicas racing for free shards mostly go for different ones, and a replica
/// that hands shards off gives up its least preferred ones.
pub(crate) fn preference(identity: &str, shard: u32) -> u64 {
    let mut h = Fnv1a::new();
    h.write(identity.as_bytes());
    h.write(&[0xff]);
    h.write(&shard.to_le_bytes());
    splitmix64(h.finish())
}

/// A strong 64-bit finalizer (SplitMix64), so small input differences change every bit.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `shards` ordered from most to least preferred by `identity`.
pub(crate) fn by_preference(identity: &str, shards: impl IntoIterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = shards.into_iter().collect();
    v.sort_by_key(|&s| std::cmp::Reverse((preference(identity, s), s)));
    v
}

/// Whether `prefix` can start a Lease name: a lowercase RFC 1123 subdomain fragment
/// (`[a-z0-9]` first and last, `[-a-z0-9.]` between) short enough for the longest
/// derived name (the membership Leases: prefix + 24 characters) to fit in 253.
pub(crate) fn is_valid_prefix(prefix: &str) -> bool {
    let bytes = prefix.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 253 - 24
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests;
