use super::*;

const MS: Duration = Duration::from_millis(1);

#[test]
fn rate_limiter_is_object_safe() {
    fn takes(_: Arc<dyn RateLimiter<String>>) {}
    takes(Arc::new(default_controller_rate_limiter::<String>()));
    takes(Arc::new(BucketRateLimiter::default()));
    let boxed: Box<dyn RateLimiter<String>> = Box::new(BucketRateLimiter::default());
    // Box<dyn ..> and Arc<dyn ..> are limiters themselves.
    takes(Arc::new(boxed));
}

#[test]
fn exponential_doubles_per_item_and_forget_resets() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    for expected in [1, 2, 4, 8, 16] {
        assert_eq!(limiter.when(&"one"), expected * MS);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), MS);
    assert_eq!(limiter.when(&"two"), 2 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), MS);
}

#[test]
fn doubles_from_5ms_to_1000s_cap() {
    let limiter = ItemExponentialFailureRateLimiter::<&str>::default();
    let mut expected = 5 * MS;
    let mut saw_cap = false;
    for _ in 0..40 {
        let got = limiter.when(&"a");
        if expected >= Duration::from_secs(1000) {
            assert_eq!(got, Duration::from_secs(1000));
            saw_cap = true;
        } else {
            assert_eq!(got, expected);
            expected *= 2;
        }
    }
    assert!(saw_cap);
    // 5 ms * 2^17 = 655.36 s, the last delay below the cap.
    let limiter = ItemExponentialFailureRateLimiter::<&str>::default();
    for _ in 0..17 {
        limiter.when(&"b");
    }
    assert_eq!(limiter.when(&"b"), Duration::from_millis(655_360));
    assert_eq!(limiter.when(&"b"), Duration::from_secs(1000));
}

#[test]
fn no_overflow_after_many_failures() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
    for _ in 0..5 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 32 * MS);
    for _ in 0..1000 {
        limiter.when(&"overflow1");
    }
    assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

    let hour = Duration::from_secs(3600);
    let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_secs(60), 1000 * hour);
    limiter.when(&"two");
    limiter.when(&"two");
    assert_eq!(limiter.when(&"two"), Duration::from_secs(240));
    for _ in 0..1000 {
        limiter.when(&"overflow2");
    }
    assert_eq!(limiter.when(&"overflow2"), 1000 * hour);

    // The largest possible base and cap do not overflow either.
    let limiter = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::MAX);
    assert_eq!(limiter.when(&"max"), Duration::MAX);
    assert_eq!(limiter.when(&"max"), Duration::MAX);
    assert_eq!(
        exponential_backoff(MS, Duration::MAX, u32::MAX),
        Duration::MAX
    );
}

#[test]
fn exponential_with_zero_base_never_waits() {
    let limiter = ItemExponentialFailureRateLimiter::new(Duration::ZERO, Duration::from_secs(1));
    for _ in 0..100 {
        assert_eq!(limiter.when(&"a"), Duration::ZERO);
    }
    assert_eq!(limiter.num_requeues(&"a"), 100);
}

/// Three attempts of an item wait 5 ms, later ones `slow`; items are counted apart, and
/// `forget` starts an item over.
fn assert_fast_then_slow(limiter: &dyn RateLimiter<&'static str>, slow: Duration) {
    for _ in 0..3 {
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }
    assert_eq!(limiter.when(&"one"), slow);
    assert_eq!(limiter.when(&"one"), slow);
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

#[test]
fn fast_then_slow_per_item() {
    let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
    assert_fast_then_slow(&limiter, Duration::from_secs(10));
}

#[test]
fn max_of_takes_the_largest_delay_and_delegates() {
    let limiter = MaxOfRateLimiter::<&str>::new(vec![
        Box::new(ItemFastSlowRateLimiter::new(
            5 * MS,
            Duration::from_secs(3),
            3,
        )),
        Box::new(ItemExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        )),
    ]);
    assert_fast_then_slow(&limiter, Duration::from_secs(3));
}

#[test]
fn max_of_nothing_never_waits() {
    let limiter = MaxOfRateLimiter::<&str>::new(Vec::new());
    assert_eq!(limiter.when(&"a"), Duration::ZERO);
    assert_eq!(limiter.num_requeues(&"a"), 0);
}

#[test]
fn with_max_wait_caps_the_delay() {
    let limiter = WithMaxWaitRateLimiter::new(
        ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(1000), 100),
        Duration::from_secs(500),
    );
    for i in 0..100 {
        assert_eq!(limiter.when(&i), 5 * MS);
    }
    for i in 0..100 {
        limiter.forget(&i);
    }
    let limiter = WithMaxWaitRateLimiter::new(
        ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(1000), 0),
        Duration::from_secs(500),
    );
    assert_eq!(limiter.when(&1), Duration::from_secs(500));
    assert_eq!(limiter.num_requeues(&1), 1);
}

#[tokio::test(start_paused = true)]
async fn burst_then_rate() {
    let bucket = BucketRateLimiter::new(10.0, 100);
    for _ in 0..100 {
        assert_eq!(RateLimiter::<str>::when(&bucket, "a"), Duration::ZERO);
    }
    // Each further token is borrowed 100 ms further into the future.
    assert_eq!(RateLimiter::<str>::when(&bucket, "a"), 100 * MS);
    assert_eq!(RateLimiter::<str>::when(&bucket, "a"), 200 * MS);
    assert_eq!(RateLimiter::<str>::when(&bucket, "a"), 300 * MS);
    // 400 ms later the debt of 3 tokens is paid and one token is back.
    tokio::time::advance(400 * MS).await;
    assert_eq!(RateLimiter::<str>::when(&bucket, "a"), Duration::ZERO);
    assert_eq!(RateLimiter::<str>::when(&bucket, "a"), 100 * MS);
    // The bucket refills to at most `burst`.
    tokio::time::advance(Duration::from_secs(3600)).await;
    for _ in 0..100 {
        assert_eq!(RateLimiter::<str>::when(&bucket, "a"), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<str>::when(&bucket, "a"), 100 * MS);
    assert_eq!(RateLimiter::<str>::num_requeues(&bucket, "a"), 0);
}

#[tokio::test(start_paused = true)]
async fn bucket_degenerate_rates() {
    let never = BucketRateLimiter::new(0.0, 2);
    assert_eq!(RateLimiter::<str>::when(&never, "a"), Duration::ZERO);
    assert_eq!(RateLimiter::<str>::when(&never, "a"), Duration::ZERO);
    assert_eq!(RateLimiter::<str>::when(&never, "a"), Duration::MAX);
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(RateLimiter::<str>::when(&never, "a"), Duration::MAX);
    let nan = BucketRateLimiter::new(f64::NAN, 0);
    assert_eq!(RateLimiter::<str>::when(&nan, "a"), Duration::ZERO);
    assert_eq!(RateLimiter::<str>::when(&nan, "a"), Duration::MAX);
    let unlimited = BucketRateLimiter::new(f64::INFINITY, 1);
    for _ in 0..1000 {
        assert_eq!(RateLimiter::<str>::when(&unlimited, "a"), Duration::ZERO);
    }
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_is_max_of_exponential_and_bucket() {
    let limiter = default_controller_rate_limiter::<u32>();
    assert_eq!(limiter.when(&0), 5 * MS);
    assert_eq!(limiter.when(&0), 10 * MS);
    // 98 more distinct items use up the burst of 100 with their 5 ms first delay...
    for i in 1..99 {
        assert_eq!(limiter.when(&i), 5 * MS);
    }
    // ...then the bucket dominates.
    assert_eq!(limiter.when(&1000), 100 * MS);
    assert_eq!(limiter.when(&1001), 200 * MS);
    assert_eq!(limiter.num_requeues(&0), 2);
    limiter.forget(&0);
    assert_eq!(limiter.num_requeues(&0), 0);
}

#[test]
fn default_item_based_doubles_from_1ms_to_the_1000s_cap() {
    let limiter = default_item_based_rate_limiter::<&str>();
    // 1 ms * 2^19 = 524.288 s, the last delay below the cap.
    for i in 0..20 {
        assert_eq!(limiter.when(&"a"), MS * (1 << i));
    }
    assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
    assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
    assert_eq!(limiter.num_requeues(&"a"), 22);
}

#[test]
fn default_item_based_tracks_items_apart_and_forget_resets_one() {
    let limiter = default_item_based_rate_limiter::<&str>();
    limiter.when(&"a");
    limiter.when(&"a");
    assert_eq!(limiter.when(&"b"), MS);
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
    assert_eq!(limiter.when(&"a"), MS);
    assert_eq!(limiter.num_requeues(&"b"), 1);
}

#[test]
fn default_item_based_has_no_overall_bucket() {
    // The controller default's bucket (burst 100) would delay the 101st distinct item.
    let limiter = default_item_based_rate_limiter::<u32>();
    for item in 0..1000 {
        assert_eq!(limiter.when(&item), MS);
    }
}
