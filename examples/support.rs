//! What every example shares: picking a cluster, waiting for a condition, `--follow`.
//!
//! The library of the examples package: each example names it `support`.

use std::error::Error;
use std::time::Duration;

use informer::testing::{CustomResourceSpec, TestApiServer};
use kube::Client;

/// The error type of the examples.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// The namespace the examples work in.
pub const NAMESPACE: &str = "default";

/// Whether `--follow` was passed: keep running after the scenario until Ctrl-C.
pub fn follow_flag() -> bool {
    std::env::args().skip(1).any(|arg| arg == "--follow")
}

/// The cluster named by `KUBECONFIG` if it is set, otherwise a fresh in-process API server
/// (serving `custom_resources` too), returned so that it lives as long as the caller keeps it.
pub async fn connect(
    custom_resources: Vec<CustomResourceSpec>,
    follow: bool,
) -> Result<(Client, Option<TestApiServer>), BoxError> {
    if std::env::var_os("KUBECONFIG").is_some() {
        let client = Client::try_default().await?;
        println!("using the cluster of KUBECONFIG");
        return Ok((client, None));
    }
    let mut builder = TestApiServer::builder();
    for spec in custom_resources {
        builder = builder.custom_resource(spec);
    }
    let server = builder.start().await?;
    println!("started the in-process API server at {}", server.url());
    if follow {
        let path = std::env::temp_dir().join("informer-example.kubeconfig");
        server.write_kubeconfig(&path)?;
        println!(
            "  kubectl works against it: KUBECONFIG={} kubectl get all",
            path.display()
        );
    }
    Ok((server.client(), Some(server)))
}

/// Polls `check` until it returns true; gives up after a minute (a generous limit: the
/// in-process server answers in milliseconds, a real cluster in well under a second).
pub async fn wait_for<F>(what: &str, mut check: F) -> Result<(), BoxError>
where
    F: AsyncFnMut() -> Result<bool, kube::Error>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while tokio::time::Instant::now() < deadline {
        if check().await? {
            println!("  ok: {what}");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("timed out waiting until {what}").into())
}

/// With `--follow`, waits for Ctrl-C (the controller keeps running meanwhile).
pub async fn follow_until_ctrl_c(follow: bool) -> Result<(), BoxError> {
    if follow {
        println!("--follow: the controller keeps running; press Ctrl-C to stop");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}

/// A step of the scenario, printed as a heading.
pub fn step(text: &str) {
    println!("\n==> {text}");
}
