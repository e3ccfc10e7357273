//! The process keeper: one thread per [`EnvTest`](super::EnvTest) that starts, stops and
//! finally kills etcd and the API server.
//!
//! Why a thread of its own: on Linux the children are started with `PR_SET_PDEATHSIG`
//! (SIGKILL), so that they die with the test process even when it is killed outright
//! (SIGKILL, abort, a CI timeout) and no destructor runs. Linux ties that signal to the
//! *thread* that started the child, not to the process; this thread lives exactly as long as
//! the `EnvTest`, whatever thread or runtime the test starts and restarts the server from.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::StopMode;

/// How long a graceful stop waits for the process to exit before killing it.
const GRACE: Duration = Duration::from_secs(15);

/// One of the two processes of an [`EnvTest`](super::EnvTest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// etcd, the storage.
    Etcd,
    /// The API server.
    ApiServer,
}

impl Component {
    fn slot(self) -> usize {
        match self {
            Component::Etcd => 0,
            Component::ApiServer => 1,
        }
    }
}

impl std::fmt::Display for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Component::Etcd => "etcd",
            Component::ApiServer => "the API server",
        })
    }
}

/// How to start one process: its binary, arguments, log file (appended to, so that restarts
/// keep the earlier output) and working directory.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub log: PathBuf,
    pub dir: PathBuf,
}

/// Whether a process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Never started, or stopped.
    Stopped,
    /// Started and not exited yet.
    Running,
    /// Started and exited by itself since (it is then forgotten: the next query says
    /// `Stopped`, and it can be started again).
    Exited(ExitStatus),
}

enum Request {
    Start(Component, Launch, oneshot::Sender<io::Result<u32>>),
    Stop(Component, StopMode, oneshot::Sender<Option<ExitStatus>>),
    State(Component, oneshot::Sender<State>),
}

/// The handle on the keeper thread. Dropping it kills both processes (the API server first),
/// reaps them and joins the thread.
pub(crate) struct Keeper {
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<()>>,
}

impl Keeper {
    pub fn new() -> io::Result<Self> {
        let (requests, inbox) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("envtest-processes".into())
            .spawn(move || keep(inbox))?;
        Ok(Self {
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    /// A keeper that runs nothing: what is left in place of one that was dropped.
    pub fn stopped() -> Self {
        Self {
            requests: None,
            thread: None,
        }
    }

    async fn ask<T>(&self, request: impl FnOnce(oneshot::Sender<T>) -> Request) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        self.requests.as_ref()?.send(request(reply)).ok()?;
        answer.await.ok()
    }

    /// Starts `component`; fails if it is already running or cannot be spawned.
    pub async fn start(&self, component: Component, launch: Launch) -> io::Result<u32> {
        self.ask(|reply| Request::Start(component, launch, reply))
            .await
            .unwrap_or_else(|| Err(io::Error::other("the envtest process keeper has stopped")))
    }

    /// Stops `component` and reaps it; `None` if it was not running.
    pub async fn stop(&self, component: Component, mode: StopMode) -> Option<ExitStatus> {
        self.ask(|reply| Request::Stop(component, mode, reply))
            .await
            .flatten()
    }

    /// Whether `component` runs (see [`State`]).
    pub async fn state(&self, component: Component) -> State {
        self.ask(|reply| Request::State(component, reply))
            .await
            .unwrap_or(State::Stopped)
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop; it then kills and reaps both processes.
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            // A panic in the keeper thread was already reported; nothing more to do here.
            let _ = thread.join();
        }
    }
}

fn keep(inbox: mpsc::Receiver<Request>) {
    let mut children: [Option<Child>; 2] = [None, None];
    for request in inbox {
        match request {
            Request::Start(component, launch, reply) => {
                let slot = &mut children[component.slot()];
                let running = slot
                    .as_mut()
                    .is_some_and(|child| child.try_wait().ok().flatten().is_none());
                let result = if running {
                    Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{component} is already running"),
                    ))
                } else {
                    spawn(&launch).map(|child| {
                        let pid = child.id();
                        *slot = Some(child);
                        pid
                    })
                };
                let _ = reply.send(result);
            }
            Request::Stop(component, mode, reply) => {
                let status = children[component.slot()]
                    .take()
                    .and_then(|child| stop(child, mode));
                let _ = reply.send(status);
            }
            Request::State(component, reply) => {
                let slot = &mut children[component.slot()];
                let state = match slot.as_mut().map(Child::try_wait) {
                    None => State::Stopped,
                    Some(Ok(Some(status))) => {
                        slot.take();
                        State::Exited(status)
                    }
                    // An error from waitpid(WNOHANG) on our own child means it is still ours.
                    Some(Ok(None) | Err(_)) => State::Running,
                };
                let _ = reply.send(state);
            }
        }
    }
    // The EnvTest is gone: the API server first (so that it does not log etcd errors), then etcd.
    for component in [Component::ApiServer, Component::Etcd] {
        if let Some(child) = children[component.slot()].take() {
            let _ = stop(child, StopMode::Kill);
        }
    }
}

fn spawn(launch: &Launch) -> io::Result<Child> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&launch.log)?;
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .current_dir(&launch.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // prctl(2), which is async-signal-safe; it allocates nothing and takes no lock.
        #[allow(unsafe_code, reason = "the child dies with its parent (see SAFETY)")]
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }
    command.spawn()
}

/// Stops and reaps `child`; `None` only if waiting for it failed (logged).
fn stop(mut child: Child, mode: StopMode) -> Option<ExitStatus> {
    if mode == StopMode::Graceful && terminate(&child) {
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline {
            match child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break,
            }
        }
    }
    // Already exited is fine: kill() then fails and wait() returns its status.
    let _ = child.kill();
    match child.wait() {
        Ok(status) => Some(status),
        // Only possible if the child was reaped elsewhere, which nothing here does.
        Err(err) => {
            tracing::warn!(pid = child.id(), %err, "envtest: waiting for a stopped process failed");
            None
        }
    }
}

/// Sends SIGTERM; false where that is not possible (the caller then kills).
#[cfg(unix)]
#[allow(unsafe_code, reason = "SIGTERM to the child (see SAFETY below)")]
fn terminate(child: &Child) -> bool {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        return false;
    };
    // SAFETY: kill(2) with a pid this thread spawned and has not reaped yet, so it cannot
    // name another process.
    unsafe { libc::kill(pid, libc::SIGTERM) == 0 }
}

#[cfg(not(unix))]
fn terminate(_child: &Child) -> bool {
    false
}
