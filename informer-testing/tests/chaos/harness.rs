//! The harness on kube-rs controllers: a correct one passes, a buggy one is caught and its
//! schedule shrunk.

use informer_testing::chaos::{Chaos, Failure, World};

use super::mirror::{self, source};

fn mirror_test(generated_names: bool) -> Chaos {
    Chaos::new(move |client, stop| mirror::run(client, stop, generated_names))
        .world(
            World::generated([source("alpha", "a"), source("beta", "b")])
                .mutate("/data/mode", ["a", "b", "c"]),
        )
        .invariant("one mirror per source", mirror::one_mirror_per_source)
        .converges(mirror::mirrored)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correct_kube_rs_controller_passes_every_seed() {
    mirror_test(false).name("mirror").run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_controller_creating_from_a_stale_cache_is_caught_and_shrunk() {
    let report = mirror_test(true)
        .name("mirror with generated names")
        .check()
        .await
        .expect_err("a stale cache makes a second mirror");
    println!("{report}");
    assert!(
        matches!(&report.failure, Failure::Invariant { name, .. } if name == "one mirror per source"),
        "{report}"
    );
    assert!(report.shrunk.len() < report.schedule.len(), "{report}");
    assert!(
        report.to_string().contains("INFORMER_CHAOS_SEED="),
        "{report}"
    );
}
