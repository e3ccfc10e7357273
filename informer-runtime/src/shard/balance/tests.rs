use super::*;

fn fnv(s: &str) -> u64 {
    let mut h = Fnv1a::new();
    h.write(s.as_bytes());
    h.finish()
}

#[test]
fn fnv1a_matches_the_published_test_vectors() {
    assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv("foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn key_hash_is_fnv1a_of_the_string_form() {
    for key in [
        ObjectKey::new(Some("default"), "web-0"),
        ObjectKey::cluster("node-1"),
    ] {
        assert_eq!(key_hash(&key), fnv(&key.to_string()));
    }
    assert_eq!(
        key_hash(&ObjectKey::new(Some("default"), "web-0")),
        0x2019_a4a4_401b_52d6
    );
}

#[test]
fn targets_sum_to_the_shard_count_and_differ_by_at_most_one() {
    let names: Vec<String> = (0..12).map(|i| format!("replica-{i:02}")).collect();
    for shards in 1..=64u32 {
        for live in 1..=names.len() {
            let ids: Vec<&str> = names[..live].iter().map(String::as_str).collect();
            let targets: Vec<u32> = ids.iter().map(|me| target(shards, &ids, me)).collect();
            assert_eq!(
                targets.iter().sum::<u32>(),
                shards,
                "{shards} shards, {live} live"
            );
            let max = *targets.iter().max().unwrap();
            let min = *targets.iter().min().unwrap();
            assert!(max - min <= 1);
            // The largest share is client-go-style fair: ceil(shards / live).
            assert_eq!(max, shards.div_ceil(live as u32));
        }
    }
}

#[test]
fn the_extra_shards_go_to_the_first_identities_in_sorted_order() {
    let ids = ["a", "b", "c"];
    assert_eq!(target(7, &ids, "a"), 3);
    assert_eq!(target(7, &ids, "b"), 2);
    assert_eq!(target(7, &ids, "c"), 2);
    assert_eq!(target(2, &ids, "c"), 0, "more replicas than shards");
}

#[test]
fn an_identity_missing_from_the_live_set_gets_the_base_share() {
    assert_eq!(target(7, &["a", "b"], "z"), 3);
}

#[test]
fn preference_order_is_a_deterministic_permutation() {
    let order = by_preference("pod-a", 0..32);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..32).collect::<Vec<_>>());
    assert_eq!(order, by_preference("pod-a", 0..32));
    assert_ne!(
        order,
        by_preference("pod-b", 0..32),
        "replicas prefer different shards"
    );
}

#[test]
fn member_lease_names_are_fixed_length_and_distinct() {
    let a = member_lease_name("ctl", "pod-a");
    let b = member_lease_name("ctl", "Pod_A with spaces/and slashes");
    assert!(a.starts_with("ctl-member-"));
    assert_eq!(a.len(), b.len());
    assert_ne!(a, b);
    assert_eq!(shard_lease_name("ctl", 3), "ctl-3");
}

#[test]
fn lease_prefix_must_be_a_lowercase_dns_fragment() {
    assert!(is_valid_prefix("my-controller.shards"));
    assert!(is_valid_prefix("a"));
    for bad in ["", "-a", "a-", "A", "a_b", "a/b", &"a".repeat(230)] {
        assert!(!is_valid_prefix(bad), "{bad:?}");
    }
}
