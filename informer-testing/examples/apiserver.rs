//! A standalone in-process Kubernetes API server, for kubectl or manual experiments.
//!
//! ```text
//! cargo run -p informer-testing --example apiserver -- --kubeconfig /tmp/kc
//! kubectl --kubeconfig /tmp/kc get pods
//! KUBECONFIG=/tmp/kc python3 -c 'import kubernetes as k; k.config.load_kube_config(); print(k.client.CoreV1Api().list_namespace())'
//! ```
//!
//! The server speaks HTTPS; the kubeconfig holds its CA and bearer token.
//! Options: `--kubeconfig PATH` (write a kubeconfig there), `--port N`
//! (default: a free port), `--bookmark-interval-ms N`, `--history-limit N` (changes kept for
//! watches and continue tokens; older ones answer `410 Gone`), `--plain-http` (no TLS, no token),
//! `--watch-cache=false` (lists at `resourceVersion=0` come in pages, as from a kube-apiserver
//! run without its watch cache).
//! Serves until Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use informer_testing::TestApiServer;

struct Options {
    kubeconfig: Option<PathBuf>,
    port: u16,
    bookmark_interval: Option<Duration>,
    history_limit: Option<usize>,
    plain_http: bool,
    watch_cache: bool,
}

const USAGE: &str = "usage: apiserver [--kubeconfig PATH] [--port PORT] [--bookmark-interval-ms MILLISECONDS] [--history-limit CHANGES] [--plain-http] [--watch-cache=false]";

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        kubeconfig: None,
        port: 0,
        bookmark_interval: None,
        history_limit: None,
        plain_http: false,
        watch_cache: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--kubeconfig" => options.kubeconfig = Some(PathBuf::from(value("--kubeconfig")?)),
            "--port" => {
                options.port = value("--port")?
                    .parse()
                    .map_err(|_| format!("--port must be a port number\n{USAGE}"))?;
            }
            "--bookmark-interval-ms" => {
                let millis: u64 = value("--bookmark-interval-ms")?
                    .parse()
                    .map_err(|_| format!("--bookmark-interval-ms must be a number\n{USAGE}"))?;
                options.bookmark_interval = Some(Duration::from_millis(millis));
            }
            "--history-limit" => {
                let changes: usize = value("--history-limit")?
                    .parse()
                    .map_err(|_| format!("--history-limit must be a number\n{USAGE}"))?;
                options.history_limit = Some(changes);
            }
            "--plain-http" => options.plain_http = true,
            "--watch-cache=false" => options.watch_cache = false,
            "--watch-cache" | "--watch-cache=true" => options.watch_cache = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    // As a cluster: each namespace holds the root CA bundle.
    let mut builder = TestApiServer::builder()
        .port(options.port)
        .root_ca_config_maps(true);
    if let Some(interval) = options.bookmark_interval {
        builder = builder.bookmark_interval(interval);
    }
    if let Some(changes) = options.history_limit {
        builder = builder.history_limit(changes);
    }
    builder = builder.watch_cache(options.watch_cache);
    if options.plain_http {
        builder = builder.plain_http();
    }
    let server = match builder.start().await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("failed to start: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("test API server listening on {}", server.url());
    if let Some(path) = &options.kubeconfig {
        if let Err(err) = server.write_kubeconfig(path) {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
        println!("kubeconfig written to {}", path.display());
    }
    println!("press Ctrl-C to stop");
    if let Err(err) = tokio::signal::ctrl_c().await {
        eprintln!("failed to wait for Ctrl-C: {err}");
        return ExitCode::FAILURE;
    }
    server.shutdown();
    println!("stopped");
    ExitCode::SUCCESS
}
