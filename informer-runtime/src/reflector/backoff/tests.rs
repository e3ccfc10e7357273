use super::*;

fn no_jitter() -> BackoffConfig {
    BackoffConfig {
        jitter: 0.0,
        ..BackoffConfig::default()
    }
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_from_800ms_and_caps_at_30s() {
    let mut b = Backoff::new(no_jitter());
    let got: Vec<u64> = (0..9).map(|_| b.next_delay().as_millis() as u64).collect();
    assert_eq!(
        got,
        [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
    );
}

#[tokio::test(start_paused = true)]
async fn backoff_resets_after_two_quiet_minutes() {
    let mut b = Backoff::new(no_jitter());
    for _ in 0..5 {
        b.next_delay();
    }
    tokio::time::advance(Duration::from_secs(120)).await;
    // Exactly 2 minutes is not "more than" 2 minutes.
    assert_eq!(b.next_delay(), Duration::from_millis(25600));
    tokio::time::advance(Duration::from_secs(121)).await;
    assert_eq!(b.next_delay(), Duration::from_millis(800));
}

#[tokio::test(start_paused = true)]
async fn backoff_jitter_stretches_each_delay_by_up_to_the_jitter_factor() {
    let mut b = Backoff::new(BackoffConfig::default());
    let mut base = Duration::from_millis(800);
    let mut saw_stretch = false;
    for _ in 0..10 {
        let d = b.next_delay();
        assert!(
            d >= base && d < base * 2,
            "{d:?} not in [{base:?}, {:?})",
            base * 2
        );
        saw_stretch |= d > base;
        base = (base * 2).min(Duration::from_secs(30));
    }
    assert!(saw_stretch, "jitter never stretched a delay");
}

#[tokio::test(start_paused = true)]
async fn backoff_reset_starts_again_at_the_first_delay() {
    let mut b = Backoff::new(no_jitter());
    b.next_delay();
    b.next_delay();
    b.reset();
    assert_eq!(b.next_delay(), Duration::from_millis(800));
}
