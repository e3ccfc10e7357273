//! The data of I1 and M1 (`benches/workloads/WORKLOADS.md`): which pod each watch event
//! changes, its JSON line, and the list response a source sends.

use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use informer::lister_watcher::ListWatchError;

/// Pods in the I1 list.
pub const LISTED: usize = 10_000;
/// Watch events in I1.
pub const EVENTS: usize = 200_000;
/// Pods in M1.
pub const M1_PODS: usize = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Modified,
    Deleted,
    Added,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Modified => "MODIFIED",
            Kind::Deleted => "DELETED",
            Kind::Added => "ADDED",
        }
    }
}

/// Event `j` of I1 over `listed` pods: what happens to which pod. Every 100th event is a
/// DELETED of its pod, followed (as the next event) by an ADDED of it.
pub fn event(j: usize, listed: usize) -> (Kind, usize) {
    if j.is_multiple_of(100) {
        (Kind::Deleted, j % listed)
    } else if j % 100 == 1 && j > 0 {
        (Kind::Added, (j - 1) % listed)
    } else {
        (Kind::Modified, j % listed)
    }
}

/// The resource version event `j` carries.
pub fn resource_version(j: usize, listed: usize) -> String {
    (listed + j).to_string()
}

/// A pod's JSON line cut around its resourceVersion value and its labels' opening brace, so
/// that event `j`'s line is assembled without parsing (as client-go's harness does).
pub struct Template {
    head: String,
    middle: String,
    tail: String,
}

impl Template {
    pub fn new(line: &str) -> Self {
        let rv_key = "\"resourceVersion\":\"";
        let rv_start = line.find(rv_key).expect("pods have a resourceVersion") + rv_key.len();
        let rv_end = rv_start + line[rv_start..].find('"').expect("closing quote");
        let labels_key = "\"labels\":{";
        let labels = line.find(labels_key).expect("pods have labels") + labels_key.len();
        assert!(
            labels > rv_end,
            "gen_pods.py writes labels after resourceVersion"
        );
        Self {
            head: line[..rv_start].to_owned(),
            middle: line[rv_end..labels].to_owned(),
            tail: line[labels..].to_owned(),
        }
    }

    pub fn all(lines: &[String]) -> Arc<Vec<Template>> {
        Arc::new(lines.iter().map(|l| Template::new(l)).collect())
    }

    /// The pod as event `j` sends it (resource version and `rev` label set).
    pub fn object(&self, j: usize, listed: usize, out: &mut String) {
        out.push_str(&self.head);
        out.push_str(&resource_version(j, listed));
        out.push_str(&self.middle);
        out.push_str("\"rev\":\"");
        out.push_str(&j.to_string());
        out.push_str("\",");
        out.push_str(&self.tail);
    }

    /// Event `j` as a watch event line, with its newline.
    pub fn render(&self, kind: Kind, j: usize, listed: usize) -> String {
        let mut out =
            String::with_capacity(self.head.len() + self.middle.len() + self.tail.len() + 64);
        out.push_str("{\"type\":\"");
        out.push_str(kind.as_str());
        out.push_str("\",\"object\":");
        self.object(j, listed, &mut out);
        out.push_str("}\n");
        out
    }
}

/// Yields the items of `iter`, spending one unit of tokio's cooperative budget on each (as
/// every tokio socket and channel does), so that the source behaves like a watch whose data
/// is always ready.
pub fn cooperative<T: Send + 'static>(
    iter: impl Iterator<Item = T> + Send + 'static,
) -> impl Stream<Item = T> + Send + 'static {
    stream::unfold(iter, |mut iter| async move {
        tokio::task::consume_budget().await;
        iter.next().map(|item| (item, iter))
    })
}

/// The watch body of I1's on-the-fly variant: event `j`'s line rendered as it is sent.
pub fn watch_body(
    templates: Arc<Vec<Template>>,
    events: usize,
    listed: usize,
) -> BoxStream<'static, Result<Bytes, ListWatchError>> {
    cooperative((0..events).map(move |j| {
        let (kind, p) = event(j, listed);
        Ok(Bytes::from(templates[p].render(kind, j, listed)))
    }))
    .boxed()
}

/// How much of a list response one chunk of [`list_body`] holds (a large HTTP read).
const LIST_CHUNK: usize = 64 * 1024;

/// A list response of `lines` (`{"kind":"PodList",...,"items":[...]}`) at resource version
/// `resource_version`, in chunks of about 64 KiB assembled as they are sent: the response is
/// never in memory whole, as an HTTP body is not.
pub fn list_body(
    lines: Arc<Vec<String>>,
    resource_version: usize,
) -> BoxStream<'static, Result<Bytes, ListWatchError>> {
    let head = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{resource_version}"}},"items":["#
    );
    let n = lines.len();
    let mut next = 0;
    let mut head = Some(head);
    let mut done = false;
    cooperative(std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut chunk = head.take().unwrap_or_default();
        while chunk.len() < LIST_CHUNK && next < n {
            if next > 0 {
                chunk.push(',');
            }
            chunk.push_str(&lines[next]);
            next += 1;
        }
        if next == n {
            chunk.push_str("]}");
            done = true;
        }
        Some(Ok(Bytes::from(chunk)))
    }))
    .boxed()
}
